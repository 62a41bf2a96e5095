package schemas

import (
	"strings"
	"unicode"
)

// TemperaturePolicyName reports whether a member name means a host temperature policy: a thermal
// guard, a cooldown, pacing, a temperature limit or reading, fan or throttle control. qualkit
// never carries one (a receipt records what ran on the host it names; it does not keep a host
// cool), so importers refuse such a member whatever it is called, and the historical markers that
// are temperature policy (thermal, prelaunch_cooldown, ...) are all names this function accepts.
//
// The decision is by meaning, over the name's words (split at '_', '-', '.', spaces and lower to
// upper case changes): a word that only a temperature policy uses (thermal, cooldown, celsius,
// pacing, throttle, fan, hwmon ...), "cool" with "down"/"off", "host" with "safety", or
// "temperature"/"temp" with any other word. "temperature" alone, or with words that only describe
// sampling ("sampling_temperature", "default_temperature"), is the sampling parameter and is not
// a policy.
func TemperaturePolicyName(name string) bool {
	words := nameWords(name)
	has := map[string]bool{}
	for _, w := range words {
		has[w] = true
	}
	for _, w := range words {
		if temperaturePolicyWords[w] || strings.HasPrefix(w, "thermal") || strings.HasSuffix(w, "celsius") ||
			strings.HasPrefix(w, "cooldown") || strings.HasPrefix(w, "throttl") {
			return true
		}
	}
	if has["cool"] && (has["down"] || has["off"]) || has["host"] && has["safety"] {
		return true
	}
	if has["temperature"] || has["temperatures"] || has["temp"] || has["temps"] {
		for _, w := range words {
			switch w {
			case "temperature", "temperatures", "temp", "temps":
			default:
				if !samplingWords[w] {
					return true
				}
			}
		}
	}
	return false
}

// temperaturePolicyWords are words only a host temperature policy uses in a member name.
var temperaturePolicyWords = map[string]bool{
	"thermal": true, "thermals": true, "thermally": true, "celsius": true, "millicelsius": true, "fahrenheit": true,
	"kelvin": true, "hwmon": true, "tjmax": true, "tctl": true, "tdie": true, "cooling": true, "cooled": true,
	"pacing": true, "pace": true, "paced": true, "fan": true, "fans": true, "heat": true, "overheat": true,
	"overheating": true, "hotspot": true, "cooldowns": true, "cooloff": true, "cooldown": true,
}

// samplingWords may stand beside "temperature" in the name of the sampling parameter.
var samplingWords = map[string]bool{
	"sampling": true, "sample": true, "default": true, "model": true, "llm": true, "request": true,
	"decode": true, "decoding": true, "generation": true, "gen": true, "softmax": true,
}

// nameWords splits a member name into lower-case words at separators and at a change from a
// lower-case letter or digit to an upper-case one ("coolDownSeconds": cool, down, seconds).
func nameWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prev := rune(0)
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return words
}

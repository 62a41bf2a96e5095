package rules

import (
	"regexp"
	"strings"
)

// The shell-evaluation rule: an argv vector must not make a shell evaluate a string. It looks
// through launcher wrappers (env and its options, nice, timeout, setsid, sudo, ...) to the program
// they run, and through every way a shell takes a command string (-c alone, in a cluster such as
// -euxc, after -o OPTION, with long options first). A wrapper that itself hands its command to a
// shell (su -c, flock -c, script -c, watch without -x, sudo -s, sg, GNU parallel) is refused too.

// MaxWrapperDepth bounds how many wrappers the rule looks through (env -S nesting included).
const MaxWrapperDepth = 32

// ShellEvaluation describes an argv element that makes the vector evaluate a string through a shell.
type ShellEvaluation struct {
	// Element is the index of the offending element (the -c flag, or the wrapper option that
	// hands a string to a shell).
	Element int
	// Shell is the program that evaluates the string (a shell's basename, or the wrapper's).
	Shell string
	// Via lists the wrappers looked through, outermost first.
	Via []string
}

func (e *ShellEvaluation) String() string {
	s := e.Shell
	if len(e.Via) > 0 {
		s += " (through " + strings.Join(e.Via, ", ") + ")"
	}
	return s + " evaluates a command string"
}

// shellNames are the command interpreters, by basename without a version suffix or ".exe".
var shellNames = map[string]bool{
	"sh": true, "bash": true, "rbash": true, "dash": true, "ash": true, "hush": true, "msh": true,
	"zsh": true, "rzsh": true, "ksh": true, "rksh": true, "mksh": true, "lksh": true, "pdksh": true,
	"oksh": true, "loksh": true, "yash": true, "posh": true, "bosh": true, "jsh": true,
	"fish": true, "csh": true, "tcsh": true, "rc": true, "es": true, "elvish": true, "nu": true,
	"xonsh": true, "osh": true, "ysh": true, "oil": true, "scsh": true, "ion": true, "murex": true,
	"pwsh": true, "powershell": true, "cmd": true,
}

// versionSuffix strips "-5.2", "5.2", "93" and ".exe" from a program name: bash5.2, ksh93, zsh-5.9.
var versionSuffix = regexp.MustCompile(`(?:[-_.]?[0-9][0-9.]*)?(?:\.exe)?$`)

// progName is the normalized basename of a program path (either slash kind, any case).
func progName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		p = p[i+1:]
	}
	p = strings.ToLower(p)
	if n := versionSuffix.ReplaceAllString(p, ""); n != "" {
		return n
	}
	return p
}

// wrapperSpec says how a launcher parses its arguments (GNU/util-linux getopt conventions: options
// stop at the first operand, "--" ends them, short options cluster, long options take "=value"
// or the next element and may be abbreviated).
type wrapperSpec struct {
	shortArg string   // short options that take an argument (attached or the next element)
	longArg  []string // long options that take a required argument
	longOpt  []string // long options without an argument (listed for abbreviation matching)
	operands int      // operands before the command (timeout DURATION, taskset MASK, flock FILE)
	// assignments: NAME=VALUE operands before the command are environment assignments (env, sudo).
	assignments bool
	// evalShort and evalLong are options that hand a string to a shell (su -c, flock --command).
	evalShort string
	evalLong  []string
	// shellShort are flags that make the wrapper run its command through a shell (sudo -s).
	shellShort string
	shellLong  []string
	// alwaysShell: the command operands are joined and run through a shell (watch, sg, parallel),
	// unless one of directShort/directLong is given (watch -x).
	alwaysShell bool
	directShort string
	directLong  []string
	// evalAnywhere: an eval option after the operands still reaches a shell (su user -c CMD passes
	// "-c CMD" to the user's shell).
	evalAnywhere bool
	// applet: the first operand names the program (busybox sh, toybox env).
	applet bool
	// noCommand: the wrapper runs no argv command of its own (su USER, script FILE).
	noCommand bool
	// evalAfterOperands: an eval option right after the operands (flock FILE -c CMD).
	evalAfterOperands bool
}

var wrappers = map[string]wrapperSpec{
	"env": {shortArg: "uCSaPL", longArg: []string{"unset", "chdir", "split-string", "argv0"},
		longOpt: []string{"ignore-environment", "null", "debug", "block-signal", "default-signal", "ignore-signal", "list-signal-handling"}, assignments: true},
	"nice":      {shortArg: "n", longArg: []string{"adjustment"}},
	"renice":    {shortArg: "ngpu", longArg: []string{"priority", "pgrp", "pid", "user"}},
	"timeout":   {shortArg: "sk", longArg: []string{"signal", "kill-after"}, longOpt: []string{"preserve-status", "foreground", "verbose"}, operands: 1},
	"setsid":    {longOpt: []string{"ctty", "fork", "wait"}},
	"nohup":     {},
	"stdbuf":    {shortArg: "ioe", longArg: []string{"input", "output", "error"}},
	"ionice":    {shortArg: "cnpPu", longArg: []string{"class", "classdata", "pid", "pgid", "uid"}, longOpt: []string{"ignore"}},
	"chrt":      {shortArg: "TPD", longArg: []string{"sched-runtime", "sched-period", "sched-deadline"}, operands: 1},
	"taskset":   {longOpt: []string{"all-tasks", "cpu-list", "pid"}, operands: 1},
	"numactl":   {shortArg: "imNCpPwLSfoTDA", longArg: []string{"interleave", "membind", "cpunodebind", "physcpubind", "preferred", "preferred-many", "weighted-interleave", "cpubind", "length", "shmid", "shm", "file", "offset", "strict", "mode", "huge", "touch"}},
	"prlimit":   {shortArg: "p", longArg: []string{"pid"}},
	"unshare":   {shortArg: "RwSGl", longArg: []string{"root", "wd", "setuid", "setgid", "load-interp", "propagation", "setgroups", "map-user", "map-group", "map-users", "map-groups", "monotonic", "boottime"}},
	"nsenter":   {shortArg: "tSG", longArg: []string{"target", "setuid", "setgid", "env"}},
	"setpriv":   {longArg: []string{"ruid", "euid", "rgid", "egid", "reuid", "regid", "groups", "inh-caps", "ambient-caps", "bounding-set", "securebits", "pdeathsig", "selinux-label", "apparmor-profile", "landlock-access", "landlock-rule", "ptracer"}},
	"chroot":    {longArg: []string{"userspec", "groups"}, operands: 1},
	"setarch":   {operands: 1},
	"linux32":   {},
	"linux64":   {},
	"exec":      {shortArg: "a"},
	"command":   {}, // not a contract value: a shell builtin or option name
	"builtin":   {},
	"time":      {shortArg: "fo", longArg: []string{"format", "output"}},
	"xargs":     {shortArg: "adEILnPs", longArg: []string{"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"}},
	"flock":     {shortArg: "wE", longArg: []string{"timeout", "wait", "conflict-exit-code"}, operands: 1, evalShort: "c", evalLong: []string{"command"}, evalAfterOperands: true}, // not a contract value: a shell builtin or option name
	"unbuffer":  {},
	"sudo":      {shortArg: "CDghprRtTUu", longArg: []string{"close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type", "command-timeout", "other-user", "user"}, assignments: true, shellShort: "si", shellLong: []string{"shell", "login"}},
	"doas":      {shortArg: "uC", shellShort: "s"},
	"run0":      {shortArg: "uDg", longArg: []string{"user", "group", "chdir", "setenv", "property", "description", "slice", "nice", "background", "machine", "unit"}},
	"pkexec":    {longArg: []string{"user"}},
	"su":        {shortArg: "gGsw", longArg: []string{"group", "supp-group", "shell", "whitelist-environment"}, evalShort: "c", evalLong: []string{"command", "session-command"}, evalAnywhere: true, noCommand: true}, // not a contract value: a shell builtin or option name
	"runuser":   {shortArg: "ugGsw", longArg: []string{"user", "group", "supp-group", "shell", "whitelist-environment"}, evalShort: "c", evalLong: []string{"command", "session-command"}, evalAnywhere: true},         // not a contract value: a shell builtin or option name
	"script":    {shortArg: "EIOBTm", longArg: []string{"echo", "log-in", "log-out", "log-io", "log-timing", "logging-format", "output-limit"}, evalShort: "c", evalLong: []string{"command"}, noCommand: true},        // not a contract value: a shell builtin or option name
	"watch":     {shortArg: "nq", longArg: []string{"interval"}, alwaysShell: true, directShort: "x", directLong: []string{"exec"}},
	"sg":        {alwaysShell: true, evalShort: "c", evalAnywhere: true, operands: 1},
	"parallel":  {shortArg: "jnNPSIEdL", alwaysShell: true},
	"strace":    {shortArg: "abeEIoOpPsSuUX", longArg: []string{"output", "trace", "signal", "status", "env", "user", "string-limit"}},
	"ltrace":    {shortArg: "aAbDeEFlnopsSuwxX", longArg: []string{"output", "library"}},
	"valgrind":  {},
	"catchsegv": {},
	"tini":      {shortArg: "pe"},
	"dumb-init": {shortArg: "r", longArg: []string{"rewrite"}},
	"catatonit": {},
	"cgexec":    {shortArg: "g"},
	"systemd-run": {shortArg: "upEHMd", longArg: []string{"unit", "property", "description", "slice", "setenv", "uid", "gid", "nice", "working-directory", "host", "machine", "service-type", "on-active", "on-boot",
		"on-startup", "on-unit-active", "on-unit-inactive", "on-calendar", "on-timezone-change", "on-clock-change", "timer-property", "path-property", "socket-property", "slice-inherit", "background", "json"},
		shellShort: "S", shellLong: []string{"shell"}},
	"firejail":         {},
	"bwrap":            {},
	"eatmydata":        {},
	"fakeroot":         {shortArg: "lsib", longArg: []string{"lib", "faked"}},
	"faketime":         {shortArg: "p", operands: 1},
	"dbus-run-session": {longArg: []string{"config-file", "dbus-daemon"}},
	"xvfb-run":         {shortArg: "efnswpl", longArg: []string{"error-file", "auth-file", "server-num", "server-args", "wait", "xauth-protocol"}},
	"proxychains":      {shortArg: "f"},
	"proxychains4":     {shortArg: "f"},
	"torsocks":         {shortArg: "uapP", longArg: []string{"user", "pass", "address", "port"}},
	"trickle":          {shortArg: "udwtlns"},
	"chpst":            {shortArg: "uUbe/nlLmdofpcrt"},
	"busybox":          {applet: true},
	"toybox":           {applet: true},
}

// bwrapArgs gives the number of arguments of bubblewrap's options (it has no short clusters).
var bwrapArgs = map[string]int{
	"--args": 1, "--argv0": 1, "--userns": 1, "--userns2": 1, "--pidns": 1, "--uid": 1, "--gid": 1, "--hostname": 1,
	"--chdir": 1, "--unsetenv": 1, "--lock-file": 1, "--sync-fd": 1, "--remount-ro": 1, "--exec-label": 1,
	"--file-label": 1, "--proc": 1, "--dev": 1, "--tmpfs": 1, "--mqueue": 1, "--dir": 1, "--seccomp": 1,
	"--add-seccomp-fd": 1, "--block-fd": 1, "--userns-block-fd": 1, "--info-fd": 1, "--json-status-fd": 1,
	"--cap-add": 1, "--cap-drop": 1, "--perms": 1, "--size": 1, "--chmod": 2, "--setenv": 2, "--bind": 2,
	"--bind-try": 2, "--dev-bind": 2, "--dev-bind-try": 2, "--ro-bind": 2, "--ro-bind-try": 2, "--bind-fd": 2,
	"--ro-bind-fd": 2, "--file": 2, "--bind-data": 2, "--ro-bind-data": 2, "--symlink": 2, "--overlay-src": 1,
	"--overlay": 3, "--tmp-overlay": 1, "--ro-overlay": 1,
}

// ShellEval reports the first argv element that makes the vector evaluate a string through a
// shell, or nil when the vector runs a program directly.
func ShellEval(argv []string) *ShellEvaluation {
	return shellEvalAt(argv, 0, nil, 0)
}

// shellEvalAt examines argv[i:] as a command line; via lists the wrappers looked through.
func shellEvalAt(argv []string, i int, via []string, depth int) *ShellEvaluation {
	for ; i < len(argv) && depth < MaxWrapperDepth; depth++ {
		name := progName(argv[i])
		if shellNames[name] {
			if j := shellEvalFlag(name, argv, i); j >= 0 {
				return &ShellEvaluation{Element: j, Shell: name, Via: via}
			}
			return nil
		}
		spec, ok := wrappers[name]
		if !ok {
			return nil
		}
		via = append(via, name)
		if spec.applet {
			i++
			continue
		}
		next, eval := wrapperCommand(name, spec, argv, i, via, depth)
		if eval != nil {
			return eval
		}
		if next < 0 {
			return nil
		}
		i = next
	}
	if depth >= MaxWrapperDepth && i < len(argv) {
		return &ShellEvaluation{Element: i, Shell: progName(argv[i]), Via: via}
	}
	return nil
}

// matchLong resolves a (possibly abbreviated) long option name among the given lists: it returns
// the list index the name belongs to (-1: unknown or ambiguous across lists).
func matchLong(name string, lists ...[]string) int {
	found := -1
	for li, list := range lists {
		for _, o := range list {
			if o == name {
				return li
			}
			if strings.HasPrefix(o, name) {
				if found >= 0 && found != li {
					return -1
				}
				found = li
			}
		}
	}
	return found
}

// wrapperCommand parses wrapper argv[i]'s options and operands and returns the index of the
// command it runs (-1: none), or the evaluation it performs itself.
func wrapperCommand(name string, spec wrapperSpec, argv []string, i int, via []string, depth int) (int, *ShellEvaluation) {
	refuse := func(j int) *ShellEvaluation { return &ShellEvaluation{Element: j, Shell: name, Via: via[:len(via)-1]} }
	shellMode, direct := false, false
	shellAt := -1
	operands := spec.operands
	j := i + 1
	if name == "bwrap" {
		for j < len(argv) && strings.HasPrefix(argv[j], "--") {
			if argv[j] == "--" {
				j++
				break
			}
			j += 1 + bwrapArgs[argv[j]]
		}
		return j, nil
	}
	for j < len(argv) {
		a := argv[j]
		switch {
		case a == "--":
			j++
			goto operands
		case name == "env" && a == "-":
			j++
		case strings.HasPrefix(a, "--"):
			opt, val, hasVal := strings.Cut(a[2:], "=")
			switch matchLong(opt, spec.evalLong, spec.shellLong, spec.directLong, spec.longArg) {
			case 0:
				return -1, refuse(j)
			case 1:
				shellMode, shellAt = true, j
			case 2:
				direct = true
			case 3:
				if name == "env" && matchLong(opt, []string{"split-string"}) == 0 {
					s, at := val, j
					if !hasVal && j+1 < len(argv) {
						s, at = argv[j+1], j+1
					}
					return -1, splitString(argv, s, at, via, depth)
				}
				if !hasVal {
					j++
				}
			}
			j++
		case name == "nice" && strings.HasPrefix(a, "-") && isNumber(a[1:]): // nice -10
			j++
		case strings.HasPrefix(a, "-") && len(a) > 1:
			letters := a[1:]
			for k := 0; k < len(letters); k++ {
				c := letters[k]
				switch {
				case strings.IndexByte(spec.evalShort, c) >= 0:
					return -1, refuse(j)
				case strings.IndexByte(spec.shellShort, c) >= 0:
					shellMode, shellAt = true, j
				case strings.IndexByte(spec.directShort, c) >= 0:
					direct = true
				case strings.IndexByte(spec.shortArg, c) >= 0:
					arg, at := letters[k+1:], j
					if arg == "" {
						if j+1 < len(argv) {
							arg = argv[j+1]
						}
						at = j + 1
						j++
					}
					if name == "env" && c == 'S' {
						return -1, splitString(argv, arg, at, via, depth)
					}
					k = len(letters)
				}
			}
			j++
		default:
			goto operands
		}
	}
operands:
	for ; operands > 0 && j < len(argv); operands-- {
		j++
	}
	if spec.assignments {
		for j < len(argv) && strings.Contains(argv[j], "=") && !strings.HasPrefix(argv[j], "=") {
			j++
		}
	}
	if spec.evalAfterOperands && j < len(argv) && (argv[j] == "-c" || argv[j] == "--command" || strings.HasPrefix(argv[j], "--command=")) {
		return -1, refuse(j)
	}
	if spec.evalAnywhere {
		for k := j; k < len(argv); k++ {
			a := argv[k]
			if strings.HasPrefix(a, "--") {
				opt, _, _ := strings.Cut(a[2:], "=")
				if opt != "" && matchLong(opt, spec.evalLong) == 0 {
					return -1, refuse(k)
				}
			} else if strings.HasPrefix(a, "-") && strings.ContainsAny(a[1:], spec.evalShort) && spec.evalShort != "" {
				return -1, refuse(k)
			}
		}
	}
	if j >= len(argv) || spec.noCommand {
		return -1, nil
	}
	if spec.alwaysShell && !direct {
		return -1, refuse(j)
	}
	if shellMode {
		return -1, refuse(shellAt)
	}
	return j, nil
}

// splitString follows env -S: its string is split into arguments that env parses as its own,
// followed by the rest of the vector. Elements found inside the string are reported at at.
func splitString(argv []string, s string, at int, via []string, depth int) *ShellEvaluation {
	words := splitWords(s)
	inner := append(append([]string{"env"}, words...), argv[at+1:]...)
	e := shellEvalAt(inner, 0, via[:len(via)-1], depth+1)
	if e == nil {
		return nil
	}
	switch {
	case e.Element <= len(words):
		e.Element = at
	default:
		e.Element = at + e.Element - len(words)
	}
	return e
}

// splitWords splits s as env -S does, closely enough for the rule: whitespace separates words,
// single and double quotes group, a backslash escapes the next character, # starts a comment.
func splitWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote == '\'':
			cur.WriteByte(c)
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'c':
				i = len(s)
			case '_':
				if quote == 0 {
					if inWord {
						words = append(words, cur.String())
						cur.Reset()
						inWord = false
					}
				} else {
					cur.WriteByte(' ')
				}
			default:
				cur.WriteByte(s[i])
				inWord = true
			}
		case quote == 0 && (c == '\'' || c == '"'):
			quote, inWord = c, true
		case quote == 0 && (c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case quote == 0 && c == '#' && !inWord:
			i = len(s)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// shellArgLong are long options of shells that take the next element as their argument.
var shellArgLong = map[string]bool{"rcfile": true, "init-file": true, "emulate": true, "debug-output": true, "profile": true, "features": true, "debug": true, "config": true, "env-config": true, "plugin-config": true}

// shellEvalLong are long options of shells that take a command string.
var shellEvalLong = []string{"command", "init-command", "commands", "execute", "cmd"} // not a contract value: a shell builtin or option name

// psArg are PowerShell parameters that take an argument (full names; any unambiguous prefix works).
var psArg = []string{"executionpolicy", "configurationname", "workingdirectory", "outputformat", "inputformat", "windowstyle", "settingsfile", "custompipename", "psconsolefile", "version", "configurationfile", "encodedarguments"}

// shellEvalFlag returns the index of the element that makes shell argv[i] evaluate a string, or -1.
func shellEvalFlag(name string, argv []string, i int) int {
	switch name {
	case "cmd":
		for j := i + 1; j < len(argv); j++ {
			a := strings.ToLower(argv[j])
			if len(a) >= 2 && a[0] == '/' && strings.IndexByte("ckr", a[1]) >= 0 {
				return j
			}
			if !strings.HasPrefix(a, "/") {
				return j // cmd runs any operand as a command line
			}
		}
		return -1
	case "pwsh", "powershell":
		for j := i + 1; j < len(argv); j++ {
			a := strings.ToLower(argv[j])
			opt := strings.TrimLeft(a, "-/")
			if opt == a || opt == "" {
				if name == "powershell" {
					return j // Windows PowerShell runs a bare operand as a command
				}
				return -1 // pwsh runs a bare operand as a script file
			}
			switch {
			case strings.HasPrefix("command", opt), strings.HasPrefix("commandwithargs", opt), opt == "cwa", // not a contract value: a shell builtin or option name
				strings.HasPrefix("encodedcommand", opt), opt == "ec":
				return j
			case strings.HasPrefix("file", opt):
				return -1
			case len(opt) >= 2 && matchLong(opt, psArg) == 0, opt == "ep", opt == "ex", opt == "wd", opt == "of", opt == "if", opt == "w":
				j++
			}
		}
		return -1
	}
	evalLetters := "c"
	switch name {
	case "fish":
		evalLetters = "cC"
	case "nu":
		evalLetters = "ce"
	}
	for j := i + 1; j < len(argv); j++ {
		a := argv[j]
		switch {
		case a == "--" || a == "-" || (a == "-b" && (name == "csh" || name == "tcsh")):
			return -1 // end of options: what follows is a script and its arguments
		case strings.HasPrefix(a, "--"):
			opt, _, hasVal := strings.Cut(a[2:], "=")
			if opt != "" && matchLong(opt, shellEvalLong) == 0 {
				return j
			}
			if shellArgLong[opt] && !hasVal {
				j++
			}
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			letters := a[1:]
			if strings.ContainsAny(letters, evalLetters) {
				return j
			}
			// -o OPTION, +o OPTION, -O SHOPT: each such letter takes the next element.
			j += strings.Count(letters, "o") + strings.Count(letters, "O")
		default:
			return -1 // a script file: its arguments are not the shell's
		}
	}
	return -1
}

package sim

// countTokens counts the job's usage with a tokenizer (Config.Tokens): the prompt, and the
// completion cut to the most whole output tokens whose returned text counts at most max_tokens
// (so usage never exceeds max_tokens; the completion then finishes "length").
func (j *job) countTokens(tc TokenCounter) error {
	p := j.q.prompt
	roles, contents := []string{"user"}, []string{p.Text}
	if p.Chat {
		roles, contents = make([]string, len(p.Messages)), make([]string, len(p.Messages))
		for i, m := range p.Messages {
			roles[i], contents[i] = m.Role, m.Content
		}
	}
	n, err := tc.PromptTokens(roles, contents)
	if err != nil {
		return err
	}
	j.prompt = int(n) + p.Images()*p.ImageTokens
	g := &j.gen
	fits := func(k int) bool {
		c, err := tc.TextTokens(g.span(0, k))
		return err == nil && c <= int64(j.q.maxTokens)
	}
	if fits(g.Tokens) {
		return nil
	}
	lo, hi := 0, g.Tokens // fits(lo), !fits(hi)
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	g.Text, g.Tokens, g.Finish = g.span(0, lo), lo, FinishLength
	return nil
}

package main

import (
	"bytes"
	"io"
	"net/url"
	"regexp"
	"strings"
)

// Secrets are never printed: every byte the command writes passes through a redactor that replaces the
// passwords of the database URLs it was given (flags and environment) by "xxxxx".

// redacted is what a password is replaced by, as url.URL.Redacted spells it.
const redacted = "xxxxx"

// keywordPassword finds the password of a keyword/value connection string (password=secret).
var keywordPassword = regexp.MustCompile(`(?:^|\s)password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// passwords returns the passwords of connection strings: URLs and keyword/value strings, both as
// written and, for URLs, as decoded.
func passwords(dsns ...string) []string {
	var out []string
	for _, dsn := range dsns {
		if strings.TrimSpace(dsn) == "" {
			continue
		}
		if u, err := url.Parse(dsn); err == nil && u.User != nil {
			if p, ok := u.User.Password(); ok && p != "" {
				out = append(out, p, url.UserPassword("", p).String()[1:]) // decoded, and escaped as in the URL
			}
		}
		if m := keywordPassword.FindStringSubmatch(dsn); m != nil {
			out = append(out, strings.Trim(m[1], "'"))
		}
		// A URL that does not parse may still hold user:password@.
		if _, rest, ok := strings.Cut(dsn, "://"); ok {
			if userinfo, _, ok := strings.Cut(rest, "@"); ok {
				if _, p, ok := strings.Cut(userinfo, ":"); ok && p != "" {
					out = append(out, p)
				}
			}
		}
	}
	var kept []string
	for _, p := range out {
		if p != "" && p != redacted && !strings.HasPrefix(p, ":") {
			kept = append(kept, p)
		}
	}
	return kept
}

// flagValues returns the values args gives the named flags (--name value, --name=value, one dash or
// two), wherever they are.
func flagValues(args []string, names ...string) []string {
	var out []string
	for i, a := range args {
		name := strings.TrimLeft(a, "-")
		if name == a {
			continue
		}
		for _, n := range names {
			switch {
			case name == n && i+1 < len(args):
				out = append(out, args[i+1])
			case strings.HasPrefix(name, n+"="):
				out = append(out, strings.TrimPrefix(name, n+"="))
			}
		}
	}
	return out
}

// redactor returns w, replacing every secret in what is written; w itself when there is none. A
// write holds whole lines here (fmt and slog write a line at a time), so a secret is never split.
func redactor(w io.Writer, secrets []string) io.Writer {
	if len(secrets) == 0 {
		return w
	}
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, redacted)
	}
	return &redacting{w: w, r: strings.NewReplacer(pairs...)}
}

type redacting struct {
	w io.Writer
	r *strings.Replacer
}

func (r *redacting) Write(p []byte) (int, error) {
	out := r.r.Replace(string(p))
	if _, err := io.Copy(r.w, bytes.NewBufferString(out)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// redactErr returns err with the passwords of dsn replaced, for an error that leaves the command by
// another way than its output (the MCP client's initialize error).
func redactErr(err error, dsn string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, p := range passwords(dsn) {
		msg = strings.ReplaceAll(msg, p, redacted)
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error whose text was redacted; errors.Is and As still reach the cause.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

package mcpclient

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// UnstorableError means a server sent text Postgres cannot keep: bytes
// that are not UTF-8, or a NUL character (\u0000) or half a UTF-16
// surrogate pair where Rounds reads the text back in SQL. The call ends
// with it; retrying gets the same answer.
type UnstorableError struct {
	// What the server sent it in: "its questions", "its result".
	What string
	// Problem names the character, or is empty for bytes that are not UTF-8.
	Problem string
}

func (e *UnstorableError) Error() string {
	if e.Problem != "" {
		return "the server sent " + e.Problem + " in " + e.What + ", which Rounds cannot store"
	}
	return "the server sent bytes that are not valid UTF-8 in " + e.What + ", which Rounds cannot store"
}

// checkStorable refuses JSON text with bytes that are not UTF-8 and, when
// escapes is set, with a NUL character or a lone surrogate.
func checkStorable(raw []byte, what string, escapes bool) error {
	if !utf8.Valid(raw) {
		return &UnstorableError{What: what}
	}
	if p := UnstorableEscape(raw); escapes && p != "" {
		return &UnstorableError{What: what, Problem: p}
	}
	return nil
}

// UnstorableEscape names what in JSON text Postgres's jsonb refuses: a NUL
// character, raw or escaped as \u0000, or an escaped UTF-16 surrogate
// without its other half. It returns "" for text it takes. Outside strings
// valid JSON has no backslash, so every escape is looked at in turn, an
// escaped backslash included (`\\u0000` is text, not a NUL).
func UnstorableEscape(b []byte) string {
	if bytes.IndexByte(b, 0) >= 0 {
		return nulCharacter
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' || i+6 > len(b) {
			i++ // skip the escaped character
			continue
		}
		r, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		switch {
		case err != nil:
		case r == 0:
			return nulCharacter
		case r >= 0xD800 && r <= 0xDBFF:
			// A high surrogate must be followed by a low one.
			if i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				if lo, err := strconv.ParseUint(string(b[i+8:i+12]), 16, 16); err == nil && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
					continue
				}
			}
			return loneSurrogate
		case r >= 0xDC00 && r <= 0xDFFF:
			return loneSurrogate
		}
		i += 5
	}
	return ""
}

const (
	nulCharacter  = "a NUL character (\\u0000)"
	loneSurrogate = "half a UTF-16 surrogate pair (an unpaired \\ud800–\\udfff escape)"
)

package config

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every problem this package reports, so callers
// can tell a bad configuration from an unreadable file.
var ErrInvalid = errors.New("invalid cloud config")

// FieldError is one problem with one key.
type FieldError struct {
	File    string
	Line    int // 0 when the problem is not tied to one line
	Section string
	Key     string
	Msg     string
}

func (e *FieldError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	switch {
	case e.Section == "":
		return fmt.Sprintf("%s: %s", loc, e.Msg)
	case e.Key == "":
		return fmt.Sprintf("%s: [%s]: %s", loc, e.Section, e.Msg)
	}
	return fmt.Sprintf("%s: [%s] %s: %s", loc, e.Section, e.Key, e.Msg)
}

// Unwrap makes every FieldError match ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Warning is something worth telling the user that does not stop Stackward,
// such as a key it does not know.
type Warning struct {
	File    string
	Line    int
	Section string
	Key     string
	Msg     string
}

func (w Warning) String() string {
	e := FieldError(w)
	return e.Error()
}

// problems collects FieldErrors for one file.
type problems struct {
	file string
	errs []error
}

func (p *problems) add(line int, section, key, format string, args ...any) {
	p.errs = append(p.errs, &FieldError{File: p.file, Line: line, Section: section, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (p *problems) err() error { return errors.Join(p.errs...) }

package config

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse checks that no input makes Parse panic and that every problem
// it reports is a FieldError naming the file.
func FuzzParse(f *testing.F) {
	f.Add(minimalGlobal)
	f.Add("[Networking]\npublic-network-name = \"a b\" ; c\naddress-sort-order = 10.0.0.0/8\n")
	f.Add("[LoadBalancerClass \"x\"]\nkey\n[Global\n\"")
	f.Fuzz(func(t *testing.T, in string) {
		cfg, _, err := Parse("f.conf", strings.NewReader(in))
		if err != nil {
			if cfg != nil || !errors.Is(err, ErrInvalid) && !strings.Contains(err.Error(), "read f.conf") {
				t.Fatalf("Parse = %v, %v", cfg, err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "f.conf") {
					t.Fatalf("problem %q does not name the file", line)
				}
			}
			return
		}
		_ = cfg.Validate()
	})
}

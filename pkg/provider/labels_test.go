package provider

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestSanitizeLabelValue(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "a valid flavor name is kept", in: "m1.large", want: "m1.large"},
		{name: "a slash in a flavor name becomes a dash", in: "m1.large/extra", want: "m1.large-extra"},
		{name: "spaces and colons become dashes", in: "gpu: A100 x2", want: "gpu--A100-x2"},
		{name: "leading and trailing punctuation is dropped", in: "-_nova.", want: "nova"},
		{name: "non-ASCII letters become dashes", in: "zone-é1", want: "zone--1"},
		{name: "a long name is cut to 63 characters ending alphanumeric", in: strings.Repeat("a", 62) + "-bcd", want: strings.Repeat("a", 62)},
		{name: "a name with nothing usable is empty", in: "///", want: ""},
		{name: "an empty name stays empty", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sanitizeLabelValue(tt.in)
			if got != tt.want {
				t.Fatalf("sanitizeLabelValue(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
				t.Fatalf("sanitizeLabelValue(%q) = %q is not a valid label value: %v", tt.in, got, errs)
			}
		})
	}
}

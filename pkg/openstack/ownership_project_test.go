package openstack

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestChunksKeepEachRequestWithinTheBudget(t *testing.T) {
	var ids []string
	for i := range 300 {
		ids = append(ids, strings.Repeat("a", 30)+string(rune('a'+i%26)))
	}
	chunks := Chunks(ids, len("device_id=&"), QueryBudget)
	var back []string
	for _, c := range chunks {
		q, err := portsQuery{projectID: "p", deviceIDs: c}.ToPortListQuery()
		if err != nil {
			t.Fatal(err)
		}
		if len(q) > QueryBudget+len("?project_id=p&") {
			t.Errorf("a chunk of %d IDs makes a %d-byte query, over the %d budget", len(c), len(q), QueryBudget)
		}
		back = append(back, c...)
	}
	if !slices.Equal(back, ids) {
		t.Errorf("the chunks do not hold every ID once, in order")
	}
	if len(chunks) < 2 || len(chunks) > 6 {
		t.Errorf("%d chunks for 300 IDs of 31 bytes; want the few that fill the budget", len(chunks))
	}
	if got := Chunks([]string{strings.Repeat("x", 2*QueryBudget), "y"}, 1, QueryBudget); len(got) != 2 {
		t.Errorf("a value longer than the budget: %d chunks, want it alone, then the rest", len(got))
	}
	if got := Chunks(nil, 1, QueryBudget); got != nil {
		t.Errorf("no values: %v, want no chunk (no request)", got)
	}
}

func TestNameChunksKeepEachNameFilterWithinTheBudget(t *testing.T) {
	var names []string
	for i := range 400 {
		names = append(names, fmt.Sprintf("node-%03d.k8s.example.com", i)) // dots are escaped: longer
	}
	chunks := NameChunks(names, QueryBudget)
	var back []string
	for _, c := range chunks {
		if q := url.QueryEscape(NamesRegexp(c)); len(q) > QueryBudget {
			t.Errorf("a chunk of %d names makes a %d-byte filter, over the %d budget", len(c), len(q), QueryBudget)
		}
		back = append(back, c...)
	}
	if !slices.Equal(back, names) || len(chunks) < 2 {
		t.Errorf("%d chunks holding %d names; want every name once, in a few chunks", len(chunks), len(back))
	}
}

func TestNamesRegexpMatchesExactlyTheNames(t *testing.T) {
	re := regexp.MustCompile(NamesRegexp([]string{"node-1", "a.b", "x|y", "(z)"}))
	for name, want := range map[string]bool{
		"node-1": true, "a.b": true, "x|y": true, "(z)": true,
		"node-10": false, "node-": false, "axb": false, "x": false, "y": false, "z": false, "a.b.c": false,
	} {
		if got := re.MatchString(name); got != want {
			t.Errorf("%q matched %v, want %v", name, got, want)
		}
	}
	// Sent as Nova's name filter, the expression survives URL encoding.
	q := url.Values{"name": {NamesRegexp([]string{"n&m=1"})}}.Encode()
	if !strings.Contains(q, "%26") {
		t.Errorf("query %s does not escape &", q)
	}
}

package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestNodeSelectorsAreReadAsUpstreamWritesThem(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     map[string]string
	}{
		{"empty selects every node", "", map[string]string{}},
		{"key=value pairs, spaces ignored", "pool = ingress, zone=a", map[string]string{"pool": "ingress", "zone": "a"}},
		{"a bare key asks only for the label", "node-role.kubernetes.io/worker", map[string]string{"node-role.kubernetes.io/worker": ""}},
		{"key= is a bare key too", "edge=", map[string]string{"edge": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNodeSelector(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestAnInvalidNodeSelectorNamesTheLabel(t *testing.T) {
	_, err := ParseNodeSelector("pool=ingress,bad key=x")
	if err == nil || !strings.Contains(err.Error(), `"bad key"`) {
		t.Errorf("err %v, want it to name the bad key", err)
	}
	if _, err := ParseNodeSelector("pool=not valid"); err == nil {
		t.Error("a value with a space was accepted")
	}
}

func TestANodeMatchesWhenItHasEveryLabel(t *testing.T) {
	sel := map[string]string{"pool": "ingress", "edge": ""}
	if !MatchesNodeSelector(sel, map[string]string{"pool": "ingress", "edge": "yes", "other": "x"}) {
		t.Error("a node with every label did not match")
	}
	if MatchesNodeSelector(sel, map[string]string{"pool": "ingress"}) {
		t.Error("a node without the bare key matched")
	}
	if MatchesNodeSelector(sel, map[string]string{"pool": "batch", "edge": ""}) {
		t.Error("a node with another value matched")
	}
}

func TestNodeSelectorInCloudConfNamesTheLine(t *testing.T) {
	conf := "[Global]\nauth-url = https://keystone.example:5000/v3\nusername = u\npassword = p\ndomain-name = Default\n[LoadBalancer]\nnode-selector = \"pool=in gress\"\n"
	_, _, err := Read("cloud.conf", strings.NewReader(conf))
	if err == nil || !strings.Contains(err.Error(), "cloud.conf:7: [LoadBalancer] node-selector") {
		t.Errorf("err %v, want it to name cloud.conf:7 and the key", err)
	}
	cfg, _, err := Read("cloud.conf", strings.NewReader(strings.Replace(conf, "in gress", "ingress", 1)))
	if err != nil || cfg.LoadBalancer.NodeSelector != "pool=ingress" {
		t.Errorf("cfg %+v err %v", cfg, err)
	}
}

func TestAnIngressHostnameSuffixMustMakeDNSNames(t *testing.T) {
	conf := "[Global]\nauth-url = https://keystone.example:5000/v3\nusername = u\npassword = p\ndomain-name = Default\n[LoadBalancer]\nenable-ingress-hostname = true\ningress-hostname-suffix = %s\n"
	if _, _, err := Read("cloud.conf", strings.NewReader(fmt.Sprintf(conf, "sslip.io"))); err != nil {
		t.Errorf("sslip.io: %v", err)
	}
	_, _, err := Read("cloud.conf", strings.NewReader(fmt.Sprintf(conf, "Not_DNS")))
	if err == nil || !strings.Contains(err.Error(), "[LoadBalancer] ingress-hostname-suffix") {
		t.Errorf("Not_DNS: %v, want an error naming the key", err)
	}
}

package config

import (
	"strings"
	"testing"
)

const classGlobal = "[Global]\nauth-url = https://keystone.example:5000/v3\nusername = u\npassword = p\ndomain-name = Default\n"

func TestLoadBalancerClassesAreReadAsUpstreamWritesThem(t *testing.T) {
	conf := classGlobal + `[LoadBalancer]
floating-network-id = net-default
floating-subnet-tags = "&public,v4"
[LoadBalancerClass "internetFacing"]
floating-network-id = net-inet
floating-subnet-id = sub-inet
[LoadBalancerClass "dmz"]
floating-subnet = "~dmz-[0-9]+"
floating-subnet-tags = "!reserved"
member-subnet-id = members
[loadbalancerclass "internetFacing"]
subnet-id = vip
`
	cfg, warnings, err := Read("cloud.conf", strings.NewReader(conf))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Read: %v, warnings %v", err, warnings)
	}
	inet, dmz := cfg.LoadBalancer.Classes["internetFacing"], cfg.LoadBalancer.Classes["dmz"]
	if inet == nil || inet.FloatingNetworkID != "net-inet" || inet.FloatingSubnetID != "sub-inet" || inet.SubnetID != "vip" {
		t.Errorf("internetFacing %+v (a repeated section adds to the class)", inet)
	}
	if dmz == nil || dmz.FloatingSubnet != "~dmz-[0-9]+" || dmz.FloatingSubnetTags != "!reserved" || dmz.MemberSubnetID != "members" {
		t.Errorf("dmz %+v", dmz)
	}
	if cfg.LoadBalancer.FloatingSubnetTags != "&public,v4" {
		t.Errorf("floating-subnet-tags %q", cfg.LoadBalancer.FloatingSubnetTags)
	}
}

func TestLoadBalancerClassProblemsNameTheFileLineAndKey(t *testing.T) {
	conf := classGlobal + `[LoadBalancerClass "bad"]
floating-subnet = "~dmz-[0-9"
unknown = 1
[LoadBalancerClass "empty"]
[LoadBalancerClass unquoted]
`
	_, warnings, err := Read("cloud.conf", strings.NewReader(conf))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`cloud.conf:7: [LoadBalancerClass "bad"] floating-subnet: invalid subnet name pattern`,
		`cloud.conf:10: [LoadBalancerClass unquoted]: the class name must be a non-empty double-quoted string`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0].String(), "cloud.conf:8") || !strings.Contains(warnings[0].String(), "unknown key") {
		t.Errorf("warnings %v, want the unknown key on line 8", warnings)
	}
	conf = classGlobal + "[LoadBalancerClass \"empty\"]\n"
	if _, _, err := Read("cloud.conf", strings.NewReader(conf)); err == nil || !strings.Contains(err.Error(), `cloud.conf:6: [LoadBalancerClass "empty"]: empty class`) {
		t.Errorf("empty class: %v", err)
	}
}

func TestFloatingSubnetPatternsMatchAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"public-v4", "public-v4", true},
		{"public-v4", "public-v4-2", false},
		{"public-*", "public-v6", true},
		{"public-?4", "public-v4", true},
		{"~pub.*-v[46]", "public-v6", true},
		{"~pub", "public", false},
		{"!public-*", "public-v4", false},
		{"!public-*", "dmz", true},
		{"a.b", "axb", false},
	} {
		m, err := SubnetNameMatcher(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if got := m(tc.name); got != tc.want {
			t.Errorf("%q matches %q: %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
	tags, all, neg := SubnetTags("!&a, b")
	if strings.Join(tags, "|") != "a|b" || !all || !neg {
		t.Errorf("SubnetTags: %v %v %v", tags, all, neg)
	}
}

func TestLoadBalancerClassChoosesTheOctaviaProvider(t *testing.T) {
	conf := classGlobal + `[LoadBalancer]
lb-provider = amphora
[LoadBalancerClass "ovn"]
lb-provider = ovn
`
	cfg, warnings, err := Read("cloud.conf", strings.NewReader(conf))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Read: %v, warnings %v", err, warnings)
	}
	if c := cfg.LoadBalancer.Classes["ovn"]; c == nil || c.LBProvider != "ovn" || cfg.LoadBalancer.LBProvider != "amphora" {
		t.Errorf("class %+v, [LoadBalancer] lb-provider %q", c, cfg.LoadBalancer.LBProvider)
	}
	if cfg.LoadBalancer.LBMethod != "" {
		t.Errorf("lb-method %q: unset, the provider's default applies", cfg.LoadBalancer.LBMethod)
	}
}

package loadbalancer

import (
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	long := strings.Repeat("n", 250)
	tests := []struct {
		name     string
		cluster  string
		svc      ServiceRef
		wantName string
		wantLen  int
	}{
		{name: "a short name is kube_service_<cluster>_<namespace>_<name>", cluster: "lab", svc: ServiceRef{"shop", "web"}, wantName: "kube_service_lab_shop_web"},
		{name: "a long name is cut to 255 with a hash suffix", cluster: "lab", svc: ServiceRef{"shop", long}, wantLen: 255},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LoadBalancerName(tt.cluster, tt.svc)
			if tt.wantName != "" && got != tt.wantName {
				t.Errorf("name %q, want %q", got, tt.wantName)
			}
			if tt.wantLen != 0 && len(got) != tt.wantLen {
				t.Errorf("name has %d characters, want %d", len(got), tt.wantLen)
			}
		})
	}
	t.Run("two long names that differ only at the end stay distinct", func(t *testing.T) {
		a := LoadBalancerName("lab", ServiceRef{"shop", long + "a"})
		b := LoadBalancerName("lab", ServiceRef{"shop", long + "b"})
		if a == b || len(a) > maxNameLen || len(b) > maxNameLen {
			t.Errorf("names %q and %q", a, b)
		}
	})
	t.Run("a floating IP description marks the cluster, and only this cluster", func(t *testing.T) {
		d := FloatingIPDescription(Identity{ClusterName: "lab", ClusterUID: "uid-1"}, ServiceRef{"shop", long})
		if len(d) > maxNameLen {
			t.Errorf("description has %d characters", len(d))
		}
		if !createdByUs(d, "uid-1") || createdByUs(d, "uid-2") || createdByUs("my own IP", "uid-1") || createdByUs(d, "") {
			t.Errorf("createdByUs is wrong for %q", d)
		}
	})
	t.Run("the cluster tag carries the UID", func(t *testing.T) {
		tags := LoadBalancerTags(Identity{ClusterName: "lab", ClusterUID: "uid-1"}, ServiceRef{"shop", "web"})
		if tags[0] != "kube_cluster_uid=uid-1" || tags[1] != "kube_service=shop/web" {
			t.Errorf("tags %v", tags)
		}
	})
}

// The tag that keeps a removed monitor's settings decodes to them, fits
// Octavia's 255 characters whatever the name, and is found among others.
func TestRemovedMonitorTag(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec MonitorSpec
		want MonitorSpec
	}{
		{"a TCP monitor", MonitorSpec{Name: "db-check", Type: "TCP", Delay: 11, Timeout: 4, MaxRetries: 5, MaxRetriesDown: 2},
			MonitorSpec{Name: "db-check", Type: "TCP", Delay: 11, Timeout: 4, MaxRetries: 5, MaxRetriesDown: 2}},
		{"an HTTP monitor whose path and name hold separators", MonitorSpec{Name: "a,b=c d", Type: "HTTP", Delay: 5, Timeout: 3, MaxRetries: 1, URLPath: "/healthz?x=1,2"},
			MonitorSpec{Name: "a,b=c d", Type: "HTTP", Delay: 5, Timeout: 3, MaxRetries: 1, URLPath: "/healthz?x=1,2"}},
		{"a name too long is shortened", MonitorSpec{Name: strings.Repeat("ü", 200), Type: "TCP", Delay: 5, Timeout: 3, MaxRetries: 1},
			MonitorSpec{Type: "TCP", Delay: 5, Timeout: 3, MaxRetries: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tag, err := removedMonitorTag(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(tag) > maxNameLen {
				t.Fatalf("tag of %d characters", len(tag))
			}
			got, m, ok := removedMonitorOf([]string{"team=db", tag})
			if !ok || got != tag {
				t.Fatalf("tag %q not found (%q)", tag, got)
			}
			if tc.want.Name == "" {
				if !strings.HasPrefix(tc.spec.Name, m.Name) || m.Name == "" {
					t.Errorf("name %q is not a start of %q", m.Name, tc.spec.Name)
				}
				m.Name = ""
			}
			if m != tc.want {
				t.Errorf("decoded %+v, want %+v", m, tc.want)
			}
		})
	}
	if _, _, ok := removedMonitorOf([]string{"team=db", removedMonitorTagPrefix + "garbage"}); ok {
		t.Error("a tag that does not decode was taken for a record")
	}
}

package loadbalancer

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestUpstreamNames(t *testing.T) {
	long := strings.Repeat("n", 250)
	t.Run("upstream's name is Stackward's up to 255 characters and cut beyond", func(t *testing.T) {
		if got := upstreamLoadBalancerName("lab", ServiceRef{"shop", "web"}); got != LoadBalancerName("lab", ServiceRef{"shop", "web"}) {
			t.Errorf("short name %q differs from Stackward's", got)
		}
		full := "kube_service_lab_shop_" + long
		if got := upstreamLoadBalancerName("lab", ServiceRef{"shop", long}); got != full[:255] {
			t.Errorf("long name %q, want the first 255 characters", got)
		}
	})
	t.Run("upstream's description names the Service and the cluster", func(t *testing.T) {
		if got := upstreamDescription("lab", ServiceRef{"shop", "web"}); got != "Kubernetes external service shop/web from cluster lab" {
			t.Errorf("description %q", got)
		}
	})
	adopted := &LoadBalancer{Tags: []string{"kube_service_lab_shop_web", adoptedTag}}
	plain := &LoadBalancer{Tags: []string{"kube_service_lab_shop_web", ClusterTag("uid-1")}}
	upstreamFIP := FloatingIP{Description: "Floating IP for Kubernetes external service shop/web from cluster lab"}
	ours := FloatingIP{Description: FloatingIPDescription(Identity{ClusterName: "lab", ClusterUID: "uid-1"}, ServiceRef{"shop", "web"})}
	for _, tc := range []struct {
		name string
		fip  FloatingIP
		lb   *LoadBalancer
		want bool
	}{
		{"upstream's floating IP on an adopted load balancer is released", upstreamFIP, adopted, true},
		{"upstream's floating IP on a load balancer Stackward made is not", upstreamFIP, plain, false},
		{"a floating IP the user made is never released", FloatingIP{Description: "office"}, adopted, false},
		{"Stackward's own floating IP is released", ours, plain, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := releasable(tc.fip, tc.lb, "uid-1"); got != tc.want {
				t.Errorf("releasable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestChoosingTheUpstreamCandidate(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	cand := func(id string, marked bool, evidence string) upstreamCandidate {
		lb := LoadBalancer{ID: id, Name: "kube_service_lab_shop_web"}
		if marked {
			lb.Tags = []string{"kube_service_lab_shop_web"}
		}
		return upstreamCandidate{lb: lb, markers: upstreamMarkers(&lb, "lab", svc), evidence: evidence}
	}
	for _, tc := range []struct {
		name  string
		cands []upstreamCandidate
		want  string // "" refused
	}{
		{"one marked candidate whose address the Service's status shows is taken", []upstreamCandidate{cand("a", true, "address 203.0.113.5")}, "a"},
		{"a marked candidate the Service's status does not show is refused (another cluster of the same name)", []upstreamCandidate{cand("a", true, "")}, ""},
		{"a shown candidate without markers is refused", []upstreamCandidate{cand("a", false, "address 203.0.113.5")}, ""},
		{"of two marked candidates, the one the status shows is taken", []upstreamCandidate{cand("a", true, ""), cand("b", true, "address 203.0.113.5")}, "b"},
		{"two shown candidates are refused", []upstreamCandidate{cand("a", true, "address 10.0.0.5"), cand("b", true, "address 203.0.113.5")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := choose(tc.cands)
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("took %s, want refused", got.ID)
			case tc.want != "" && (got == nil || got.ID != tc.want):
				t.Errorf("took %v (%s), want %s", got, why, tc.want)
			}
			if got == nil {
				err := notAdopted("kube_service_lab_shop_web", why, tc.cands)
				if !errors.Is(err, ErrNotAdopted) {
					t.Errorf("error %v is not ErrNotAdopted", err)
				}
				for _, c := range tc.cands {
					if !strings.Contains(err.Error(), c.lb.ID) {
						t.Errorf("error %q does not name %s", err, c.lb.ID)
					}
				}
			}
		})
	}
}

func TestTheServiceStatusShowsAnAddress(t *testing.T) {
	for _, tc := range []struct {
		name      string
		published []string
		addr      string
		want      bool
	}{
		{"the same IP", []string{"203.0.113.5"}, "203.0.113.5", true},
		{"an ingress hostname made of the IP and a suffix", []string{"203.0.113.5.nip.io"}, "203.0.113.5", true},
		{"another IP with the address as its prefix", []string{"203.0.113.50"}, "203.0.113.5", false},
		{"nothing published", nil, "203.0.113.5", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := shows(tc.published, tc.addr) != ""; got != tc.want {
				t.Errorf("shows(%v, %s) = %v, want %v", tc.published, tc.addr, got, tc.want)
			}
		})
	}
}

// Adoption fails closed: Octavia busy (409) or failing when the tags are
// written leaves the upstream load balancer as it was and creates nothing.
func TestAdoptionThatCannotWriteTheTagsChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		wantRetry bool
	}{
		{"Octavia busy is a retry", gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusConflict}, true},
		{"a cloud error is an error", gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusInternalServerError}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oct, net := newFakeOctavia(), newFakeNeutron()
			name := "kube_service_lab_shop_web"
			oct.lbs["up-1"] = &fakeLB{lb: LoadBalancer{ID: "up-1", Name: name, ProvisioningStatus: StatusActive, Tags: []string{name}, VIPAddress: "10.0.0.100"}}
			oct.err["update_loadbalancer"] = tc.err
			m := newManager(oct, net)
			svc := service(func(s *corev1.Service) {
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.100"}}
			})
			_, err := m.Ensure(context.Background(), "lab", svc, nodes("10.0.0.1"))
			if err == nil || isRetry(err) != tc.wantRetry || !strings.Contains(err.Error(), "up-1") {
				t.Errorf("Ensure: %v (retry %v), want retry %v naming up-1", err, isRetry(err), tc.wantRetry)
			}
			if got := oct.lbs["up-1"].lb.Tags; len(got) != 1 || len(oct.lbs) != 1 {
				t.Errorf("tags %v, %d load balancers; want upstream's alone, unchanged", got, len(oct.lbs))
			}
		})
	}
}

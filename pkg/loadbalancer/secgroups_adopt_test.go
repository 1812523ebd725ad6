package loadbalancer

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestSecurityGroupOwnership(t *testing.T) {
	upstreamDesc := "Security Group for shop/web Service LoadBalancer in cluster lab"
	tests := []struct {
		name string
		// existing is the group of the Service's name before the first
		// sync (nil: none), attached to port-a.
		existing *SecurityGroup
		// wantErr: Ensure and Delete refuse, naming this.
		wantErr string
	}{
		{
			name: "a group Stackward creates carries this cluster's UID tag",
		},
		{
			name: "upstream's group of the Service is adopted: tagged, its rules made the Service's, kept on the member ports, and deleted with the Service",
			existing: &SecurityGroup{ID: "sg-upstream", Name: "lb-sg-6b1a0f4e-uid-shop-web", Description: upstreamDesc,
				Rules: []Rule{{ID: "r-old", Direction: "ingress", Ethertype: "IPv4", Protocol: "tcp", PortMin: 31999, PortMax: 31999, RemoteIPPrefix: "10.0.0.0/24"}}},
		},
		{
			name: "a group of the Service's name that another cluster tagged is neither changed nor deleted",
			existing: &SecurityGroup{ID: "sg-theirs", Name: "lb-sg-6b1a0f4e-uid-shop-web", Description: upstreamDesc, Tags: []string{"kube_cluster_uid=another-cluster"},
				Rules: []Rule{{ID: "r-theirs", Direction: "ingress", Ethertype: "IPv4", Protocol: "tcp", PortMin: 31999, PortMax: 31999, RemoteIPPrefix: "10.0.0.0/24"}}},
			wantErr: "carries another cluster's tag kube_cluster_uid=another-cluster",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, oct, sgs := sgEnv(t)
			svc := sgService()
			ctx := context.Background()
			if tc.existing != nil {
				g := *tc.existing
				sgs.groups[g.ID] = &g
				sgs.ports["port-a"].SecurityGroups = append(sgs.ports["port-a"].SecurityGroups, g.ID)
			}
			if tc.wantErr != "" {
				_, err := m.Ensure(ctx, "lab", svc, sgNodes("10.0.0.1", "10.0.0.2"))
				for range 10 {
					if err == nil || !isRetry(err) {
						break
					}
					if l := oct.only(); l != nil {
						oct.setStatus(l.lb.ID, StatusActive)
					}
					_, err = m.Ensure(ctx, "lab", svc, sgNodes("10.0.0.1", "10.0.0.2"))
				}
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Ensure: %v, want %q", err, tc.wantErr)
				}
				if derr := m.Delete(ctx, "lab", svc); derr == nil || !strings.Contains(derr.Error(), tc.wantErr) {
					t.Errorf("Delete: %v, want %q", derr, tc.wantErr)
				}
				g := sgs.only(t)
				if !slices.Equal(g.Tags, tc.existing.Tags) || !slices.Equal(ingress(g), ingress(tc.existing)) {
					t.Errorf("their group changed: tags %v rules %v", g.Tags, ingress(g))
				}
				for _, w := range sgs.writes() {
					if w != "update_port" || !slices.Contains(sgs.ports["port-a"].SecurityGroups, g.ID) {
						t.Errorf("wrote %v; port-a groups %v", sgs.writes(), sgs.ports["port-a"].SecurityGroups)
						break
					}
				}
				if slices.Contains(sgs.ports["port-b"].SecurityGroups, g.ID) {
					t.Error("their group was put on a member port")
				}
				return
			}
			converge(t, m, oct, svc, sgNodes("10.0.0.1", "10.0.0.2"))
			g := sgs.only(t)
			if tc.existing != nil && g.ID != tc.existing.ID {
				t.Errorf("group %s, want upstream's %s kept", g.ID, tc.existing.ID)
			}
			if !slices.Equal(g.Tags, []string{ClusterTag(testUID)}) {
				t.Errorf("tags %v, want this cluster's", g.Tags)
			}
			want := []string{"ingress/IPv4/tcp/30080-30080/10.0.0.0/24", "ingress/IPv4/udp/30053-30053/10.0.0.0/24"}
			if got := ingress(g); !slices.Equal(got, want) {
				t.Errorf("rules %v, want %v", got, want)
			}
			for _, p := range []string{"port-a", "port-b"} {
				if !slices.Contains(sgs.ports[p].SecurityGroups, g.ID) {
					t.Errorf("%s groups %v, want the Service's", p, sgs.ports[p].SecurityGroups)
				}
			}
			sgs.calls = nil
			converge(t, m, oct, svc, sgNodes("10.0.0.1", "10.0.0.2"))
			if w := sgs.writes(); len(w) != 0 {
				t.Errorf("a second sync wrote %v", w)
			}
			if err := m.Delete(ctx, "lab", svc); err != nil {
				t.Fatal(err)
			}
			if len(sgs.groups) != 0 || !slices.Equal(sgs.ports["port-a"].SecurityGroups, []string{"operator-sg"}) {
				t.Errorf("left groups %v, port-a %v", sgs.groups, sgs.ports["port-a"].SecurityGroups)
			}
		})
	}
}

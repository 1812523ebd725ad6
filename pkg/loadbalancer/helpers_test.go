package loadbalancer

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cloud-provider/api"

	"github.com/stackward/stackward/pkg/config"
)

const testUID = "3f1c7a52-0000-4000-8000-000000000001"

// newManager is a Manager over the fakes. Its syncs never wait inside the
// call (SyncWait): the tests play the service controller's requeues and
// move the fake's load balancers on themselves.
func newManager(oct *fakeOctavia, net *fakeNeutron) *Manager {
	return &Manager{Octavia: oct, Neutron: net, Config: config.Defaults().LoadBalancer, SyncWait: -1,
		ClusterUID: func(context.Context) (string, error) { return testUID, nil }}
}

func service(mut ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{}},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080}},
		},
	}
	for _, m := range mut {
		m(svc)
	}
	return svc
}

func nodes(ips ...string) []*corev1.Node {
	var out []*corev1.Node
	for i, ip := range ips {
		out = append(out, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "node-" + string(rune('a'+i))},
			Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}},
		})
	}
	return out
}

func isRetry(err error) bool {
	var re *api.RetryError
	return errors.As(err, &re)
}

// converge runs Ensure, letting the fake settle between calls, until it
// succeeds; it fails the test after 10 rounds.
func converge(t *testing.T, m *Manager, oct *fakeOctavia, svc *corev1.Service, ns []*corev1.Node) *corev1.LoadBalancerStatus {
	t.Helper()
	ctx := context.Background()
	for range 10 {
		st, err := m.Ensure(ctx, "lab", svc, ns)
		if err == nil {
			return st
		}
		if !isRetry(err) {
			t.Fatalf("Ensure: %v", err)
		}
		if l := oct.only(); l != nil && l.lb.ProvisioningStatus != StatusActive {
			oct.setStatus(l.lb.ID, StatusActive) // Octavia finishes its work
		}
	}
	t.Fatal("Ensure did not converge in 10 rounds")
	return nil
}

var _ = time.Second

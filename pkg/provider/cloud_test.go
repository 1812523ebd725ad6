package provider

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"

	"github.com/stackward/stackward/pkg/openstack"
)

// fakeClientBuilder hands every controller the same fake clientset.
type fakeClientBuilder struct {
	client clientset.Interface
	err    error
}

func (b fakeClientBuilder) Config(string) (*restclient.Config, error) {
	return nil, errors.New("no config")
}
func (b fakeClientBuilder) ConfigOrDie(string) *restclient.Config { panic("no config") }
func (b fakeClientBuilder) Client(string) (clientset.Interface, error) {
	return b.client, b.err
}
func (b fakeClientBuilder) ClientOrDie(string) clientset.Interface { return b.client }

// The cloud-node controller only logs a failed initialization; the Event a
// user sees on the Node comes from the provider, through the apiserver.
func TestNodeMatchingNoServerGetsAWarningEvent(t *testing.T) {
	node := newNode("web-9", "", false)
	client := fake.NewClientset(node)
	cloud, err := New(testConfig(), &openstack.Clients{Compute: newFakeCompute(testServers()...)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	cloud.Initialize(fakeClientBuilder{client: client}, stop)

	v2, _ := cloud.InstancesV2()
	if _, err := v2.InstanceMetadata(context.Background(), node); !openstack.IsNotFound(err) {
		t.Fatalf("InstanceMetadata error = %v, want not found", err)
	}

	var got *corev1.Event
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		got = &list.Items[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("no Event recorded: %v", err)
	}
	if got.Type != corev1.EventTypeWarning || got.Reason != "InstanceNotFound" || got.InvolvedObject.Kind != "Node" || got.InvolvedObject.Name != "web-9" ||
		got.Source.Component != "stackward-ccm" || !strings.Contains(got.Message, `no server named "web-9"`) {
		t.Fatalf("event = %s %s on %s/%s from %s: %q", got.Type, got.Reason, got.InvolvedObject.Kind, got.InvolvedObject.Name, got.Source.Component, got.Message)
	}
}

// Without a client the provider still answers; only the Events are lost.
func TestProviderWorksWithoutAnEventClient(t *testing.T) {
	cloud, err := New(testConfig(), &openstack.Clients{Compute: newFakeCompute(testServers()...)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	cloud.Initialize(fakeClientBuilder{err: errors.New("no credentials")}, stop)

	v2, _ := cloud.InstancesV2()
	if _, err := v2.InstanceMetadata(context.Background(), newNode("web-9", "", false)); !openstack.IsNotFound(err) {
		t.Fatalf("InstanceMetadata error = %v, want not found", err)
	}
	md, err := v2.InstanceMetadata(context.Background(), newNode("web-1", "", false))
	if err != nil || md.ProviderID != "openstack:///"+web1ID {
		t.Fatalf("InstanceMetadata(web-1) = %+v, %v", md, err)
	}
}

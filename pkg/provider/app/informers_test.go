package app

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestInformersCacheNodesWithoutManagedFields(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}},
		Spec: corev1.NodeSpec{ProviderID: "openstack:///x"}}
	got, err := stripManagedFields(n)
	if err != nil {
		t.Fatal(err)
	}
	node := got.(*corev1.Node)
	if node.ManagedFields != nil || node.Labels["a"] != "b" || node.Spec.ProviderID != "openstack:///x" {
		t.Errorf("transformed Node %+v: want it whole but for managedFields", node)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "n1", Obj: n}
	if got, err := stripManagedFields(tomb); err != nil || got != any(tomb) {
		t.Errorf("a tombstone became %v, %v; want it unchanged", got, err)
	}
}

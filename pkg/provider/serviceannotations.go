package provider

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// annotateService merges annotations into a Service with a JSON merge
// patch of its metadata, leaving the user's other annotations alone. It goes
// through the status subresource, as the service controller's own metadata
// writes do (its load-balancer-cleanup finalizer): the apiserver keeps
// metadata changes there and drops spec ones, and the CCM's role already
// has patch on services/status only.
func (k *kubeAccess) annotateService(ctx context.Context, svc *corev1.Service, annotations map[string]string) error {
	client, err := k.get()
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	if _, err := client.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("patch Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

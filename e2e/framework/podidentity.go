package framework

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// serviceAccountDir is where a container finds its API credentials.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// containerKubeconfig writes a kubeconfig with the identity container c gets
// in the pod: the pod's ServiceAccount for a projected token, or, for a
// ServiceAccount token Secret mounted there, the token the token controller
// put in it (whose ServiceAccount must be the one it names, not the pod's).
func (cp *ControlPlane) containerKubeconfig(ctx context.Context, t *testing.T, ns string, pod corev1.PodSpec, c corev1.Container) string {
	t.Helper()
	var volume string
	for _, m := range c.VolumeMounts {
		if m.MountPath == serviceAccountDir {
			volume = m.Name
		}
	}
	var saConfig *rest.Config
	for _, v := range pod.Volumes {
		if v.Name != volume {
			continue
		}
		switch {
		case v.Projected != nil:
			cfg, err := cp.ServiceAccountConfig(ctx, ns, pod.ServiceAccountName)
			if err != nil {
				t.Fatal(err)
			}
			saConfig = cfg
		case v.Secret != nil:
			var token []byte
			var owner string
			// The token controller fills a Secret made before its
			// ServiceAccount only on a later pass: minutes on a loaded lab.
			err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
				s, err := cp.Admin.CoreV1().Secrets(ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				token, owner = s.Data["token"], s.Annotations["kubernetes.io/service-account.name"]
				return len(token) > 0, nil
			})
			if err != nil {
				t.Fatalf("container %s: the token controller filled no token into Secret %s: %v", c.Name, v.Secret.SecretName, err)
			}
			saConfig = cp.RESTConfigForToken(string(token))
			who, err := kubernetes.NewForConfigOrDie(saConfig).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("container %s: whoami with its token: %v", c.Name, err)
			}
			if want := "system:serviceaccount:" + ns + ":" + owner; who.Status.UserInfo.Username != want || owner == pod.ServiceAccountName {
				t.Fatalf("container %s authenticates as %q (Secret for %q, pod's ServiceAccount %q); want its own ServiceAccount",
					c.Name, who.Status.UserInfo.Username, owner, pod.ServiceAccountName)
			}
		}
	}
	if saConfig == nil {
		t.Fatalf("container %s mounts no credentials at %s", c.Name, serviceAccountDir)
	}
	kubeconfig := filepath.Join(t.TempDir(), c.Name+".kubeconfig")
	if err := cp.WriteKubeconfig(kubeconfig, saConfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

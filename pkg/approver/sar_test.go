package approver

import (
	"context"
	"errors"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestSubjectAccessReview(t *testing.T) {
	tests := []struct {
		name    string
		allowed bool
		evalErr string
		err     error
		want    Verdict
		reason  string
	}{
		{name: "allowed requestor is approved", allowed: true, want: Approve, reason: ReasonVerified},
		{name: "requestor without selfnodeserver is denied", allowed: false, want: Deny, reason: ReasonSARDenied},
		{name: "apiserver error is no decision", err: errors.New("etcd timeout")},
		{name: "an authorizer that could not evaluate is no decision, not a denial", evalErr: "webhook authorizer timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			var asked *authorizationv1.SubjectAccessReview
			client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
				asked = a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
				if tt.err != nil {
					return true, nil, tt.err
				}
				out := asked.DeepCopy()
				out.Status.Allowed = tt.allowed
				out.Status.EvaluationError = tt.evalErr
				return true, out, nil
			})
			e := NewEvaluator(testCloud(), registered, client.AuthorizationV1().SubjectAccessReviews(), testPolicy)
			d, err := e.Evaluate(context.Background(), makeCSR(t, csrSpec{node: "node-a", ips: []string{"10.0.0.10"}}))
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("got %s, %v; want error %v", d.Verdict, err, tt.err)
				}
				return
			}
			if tt.evalErr != "" {
				if err == nil || d.Verdict == Approve || d.Verdict == Deny {
					t.Fatalf("got %s/%s, %v; want no decision and an error", d.Verdict, d.Reason, err)
				}
				return
			}
			if err != nil || d.Verdict != tt.want || d.Reason != tt.reason {
				t.Fatalf("got %s/%s, %v; want %s/%s", d.Verdict, d.Reason, err, tt.want, tt.reason)
			}
			ra := asked.Spec.ResourceAttributes
			if asked.Spec.User != "system:node:node-a" || ra.Subresource != "selfnodeserver" || ra.Verb != "create" {
				t.Errorf("asked %+v %+v", asked.Spec, ra)
			}
		})
	}
}

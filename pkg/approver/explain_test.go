package approver

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

func TestExplainShowsEachCheckAndChangesNothing(t *testing.T) {
	csr := makeCSR(t, csrSpec{name: "steals", node: "node-a", ips: []string{"10.0.0.10", "198.18.0.11"}})
	client := fake.NewClientset(csr, node("node-a", "openstack:///id-a"))
	var out bytes.Buffer
	if err := explainWithClient(context.Background(), Config{Options: Options{Policy: testPolicy}, Cloud: testCloud()}, client, "steals", &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"requestor              ok", "instance               ok", "names                  deny IPNotOfInstance", "198.18.0.11", "=> deny IPNotOfInstance"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain output lacks %q:\n%s", want, out.String())
		}
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("explain wrote to the cluster: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

package provider

import (
	"fmt"
	"net/http"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/stackward/stackward/internal/openstacktest"
	"github.com/stackward/stackward/pkg/openstack"
)

// newFakeCompute is Nova as the provider sees it. GetServer returns a
// DELETED server as stored: the provider must not rely on the adapter
// hiding deleted servers.
func newFakeCompute(servers ...openstack.Server) *openstacktest.Compute {
	f := openstacktest.NewCompute(servers...)
	f.ReturnDeleted = true
	return f
}

// unavailable is what the adapter returns for an HTTP 503 from Nova.
func unavailable() error {
	return fmt.Errorf("get server: %w", gophercloud.ErrUnexpectedResponseCode{
		Method: http.MethodGet, Expected: []int{http.StatusOK}, Actual: http.StatusServiceUnavailable,
	})
}

package cloudsim

import (
	"github.com/gophercloud/gophercloud/v2"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/apiversions"
	"github.com/gophercloud/gophercloud/v2/openstack/utils"
)

func TestVersionDocuments(t *testing.T) {
	_, authURL := startSim(t, Options{})
	pc := provider(t, demoAuth(authURL))
	base := authURL[:len(authURL)-len("v3")]
	tests := []struct {
		name, url string
		major     int
		status    utils.Status
	}{
		{"Keystone's root lists v3 as stable", base, 3, utils.StatusCurrent},
		{"Nova's root lists v2.1 as CURRENT", base + "compute/", 2, utils.StatusCurrent},
		{"Neutron's unversioned endpoint lists v2.0 as CURRENT", base + "networking/", 2, utils.StatusCurrent},
		{"Octavia's unversioned endpoint lists v2 as CURRENT", base + "load-balancer/", 2, utils.StatusCurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs, err := utils.GetServiceVersions(ctxT(t), pc, tt.url, true)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range vs {
				found = found || (v.Major == tt.major && v.Status == tt.status)
			}
			if !found {
				t.Fatalf("versions = %+v", vs)
			}
		})
	}
	t.Run("Nova's v2.1 document advertises microversions", func(t *testing.T) {
		c := computeClient(t, authURL)
		mv, err := utils.GetSupportedMicroversions(ctxT(t), c)
		if err != nil || mv.MaxMajor != 2 || mv.MaxMinor < 47 || mv.MinMinor != 1 {
			t.Fatalf("microversions = %+v, %v", mv, err)
		}
	})
	t.Run("gophercloud's Octavia apiversions see v2.x", func(t *testing.T) {
		env := newLBEnv(t, Options{})
		pages, err := apiversions.List(env.lb).AllPages(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		vs, _ := apiversions.ExtractAPIVersions(pages)
		if len(vs) == 0 || vs[len(vs)-1].ID != octaviaMaxVersion || vs[len(vs)-1].Status != "CURRENT" {
			t.Fatalf("versions = %+v", vs)
		}
	})
}

func TestSmallDocuments(t *testing.T) {
	_, authURL := startSim(t, Options{})
	pc := provider(t, demoAuth(authURL))
	base := authURL[:len(authURL)-len("v3")]
	tests := []struct{ name, path, key string }{
		{"Nova's legacy v2 document", "compute/v2/", "version"},
		{"Neutron's v2.0 resource list", "networking/v2.0/", "resources"},
		{"Octavia's providers", "load-balancer/v2/lbaas/providers", "providers"},
		{"Octavia's flavors", "load-balancer/v2.0/lbaas/flavors", "flavors"},
		{"Keystone's v3 document", "v3", "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is served", func(t *testing.T) {
			var body map[string]any
			_, err := pc.Request(ctxT(t), "GET", base+tt.path, &gophercloud.RequestOpts{JSONResponse: &body, OkCodes: []int{200}}) //nolint:bodyclose // gophercloud closes it, decoding it into body
			if err != nil || body[tt.key] == nil {
				t.Fatalf("GET %s: %v, %v", tt.path, body, err)
			}
		})
	}
}

package openstack

import "testing"

// FuzzParseProviderID checks that whatever ParseProviderID accepts prints
// back to the same providerID and carries a server ID safe to put in a URL.
func FuzzParseProviderID(f *testing.F) {
	for _, s := range []string{"openstack:///abc-123", "openstack://RegionOne/abc", "openstack:///a/b", "openstack://r?x/a", "aws:///i-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pid string) {
		region, id, err := ParseProviderID(pid)
		if err != nil {
			return
		}
		if got := ProviderID(region, id); got != pid {
			t.Fatalf("ProviderID(%q, %q) = %q, want %q", region, id, got, pid)
		}
		if !validID(id) {
			t.Fatalf("accepted server ID %q", id)
		}
	})
}

package cloudsim

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

type seedProblem struct{ field, msg string }

func knownRoles() string {
	var out []string
	for r := range roleIDs {
		out = append(out, r)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// validateSeed checks a seed's references and values; field paths match
// the YAML keys so that LoadSeed can report lines.
func validateSeed(sd *Seed) []seedProblem {
	var ps []seedProblem
	add := func(field, format string, args ...any) {
		ps = append(ps, seedProblem{field, fmt.Sprintf(format, args...)})
	}
	projects := map[string]bool{}
	for i, p := range sd.Projects {
		f := fmt.Sprintf("projects[%d]", i)
		if p.Name == "" {
			add(f+".name", "a project needs a name")
		}
		if projects[p.Name] {
			add(f+".name", "duplicate project %q", p.Name)
		}
		projects[p.Name] = true
		if p.ID != "" {
			projects[p.ID] = true
		}
	}
	users := map[string]bool{}
	for i, u := range sd.Users {
		f := fmt.Sprintf("users[%d]", i)
		if u.Name == "" {
			add(f+".name", "a user needs a name")
		}
		if u.Password == "" {
			add(f+".password", "user %q needs a password", u.Name)
		}
		if u.Project != "" && !projects[u.Project] {
			add(f+".project", "unknown project %q", u.Project)
		}
		for j, role := range u.Roles {
			if _, ok := roleIDs[role]; !ok {
				add(fmt.Sprintf("%s.roles[%d]", f, j), "unknown role %q (want one of %s)", role, knownRoles())
			}
		}
		users[u.Name] = true
		if u.ID != "" {
			users[u.ID] = true
		}
	}
	for i, a := range sd.ApplicationCredentials {
		f := fmt.Sprintf("applicationCredentials[%d]", i)
		if a.Secret == "" {
			add(f+".secret", "an application credential needs a secret")
		}
		if !users[a.User] {
			add(f+".user", "unknown user %q", a.User)
		}
		for j, role := range a.Roles {
			if _, ok := roleIDs[role]; !ok {
				add(fmt.Sprintf("%s.roles[%d]", f, j), "unknown role %q (want one of %s)", role, knownRoles())
			}
		}
	}
	flavors := map[string]bool{}
	for i, fl := range sd.Flavors {
		f := fmt.Sprintf("flavors[%d]", i)
		if fl.Name == "" {
			add(f+".name", "a flavor needs a name")
		}
		flavors[fl.Name] = true
		if fl.ID != "" {
			flavors[fl.ID] = true
		}
	}
	azs := map[string]bool{}
	for _, az := range sd.AvailabilityZones {
		azs[az] = true
	}
	nets := map[string]SeedNetwork{}
	for i, n := range sd.Networks {
		f := fmt.Sprintf("networks[%d]", i)
		if n.Name == "" {
			add(f+".name", "a network needs a name")
		}
		if _, dup := nets[n.Name]; dup {
			add(f+".name", "duplicate network %q", n.Name)
		}
		nets[n.Name] = n
		if n.Project != "" && !projects[n.Project] {
			add(f+".project", "unknown project %q", n.Project)
		}
		for j, sn := range n.Subnets {
			pf, err := netip.ParsePrefix(sn.CIDR)
			if err != nil {
				add(fmt.Sprintf("%s.subnets[%d].cidr", f, j), "invalid CIDR %q", sn.CIDR)
				continue
			}
			if sn.IPVersion != 0 && (sn.IPVersion == 4) != pf.Addr().Is4() {
				add(fmt.Sprintf("%s.subnets[%d].ipVersion", f, j), "ipVersion %d does not match CIDR %s", sn.IPVersion, sn.CIDR)
			}
		}
	}
	for i, r := range sd.Routers {
		f := fmt.Sprintf("routers[%d]", i)
		if n, ok := nets[r.ExternalNetwork]; r.ExternalNetwork != "" && (!ok || !n.External) {
			add(f+".externalNetwork", "%q is not an external network", r.ExternalNetwork)
		}
		for j, in := range r.Interfaces {
			if _, ok := nets[in]; !ok {
				add(fmt.Sprintf("%s.interfaces[%d]", f, j), "unknown network %q", in)
			}
		}
	}
	for i, s := range sd.Servers {
		f := fmt.Sprintf("servers[%d]", i)
		for _, p := range validateServerSpec(s, projects, flavors, azs, nets) {
			add(f+"."+p.field, "%s", p.msg)
		}
	}
	return ps
}

// validateServerSpec is shared by seeds and CreateServer.
func validateServerSpec(s ServerSpec, projects, flavors, azs map[string]bool, nets map[string]SeedNetwork) []seedProblem {
	var ps []seedProblem
	add := func(field, format string, args ...any) {
		ps = append(ps, seedProblem{field, fmt.Sprintf(format, args...)})
	}
	if s.Name == "" {
		add("name", "a server needs a name")
	}
	if s.Project != "" && !projects[s.Project] {
		add("project", "unknown project %q", s.Project)
	}
	if s.Flavor != "" && !flavors[s.Flavor] {
		add("flavor", "unknown flavor %q", s.Flavor)
	}
	if s.AZ != "" && !azs[s.AZ] {
		add("az", "unknown availability zone %q", s.AZ)
	}
	switch strings.ToUpper(s.Status) {
	case "", "ACTIVE", "SHUTOFF", "BUILD", "ERROR", "PAUSED", "SUSPENDED":
	default:
		add("status", "unsupported status %q", s.Status)
	}
	for _, a := range []struct{ field, v string }{{"accessIPv4", s.AccessIPv4}, {"accessIPv6", s.AccessIPv6}} {
		if a.v != "" {
			if _, err := netip.ParseAddr(a.v); err != nil {
				add(a.field, "invalid IP %q", a.v)
			}
		}
	}
	for j, nic := range s.NICs {
		nf := fmt.Sprintf("nics[%d]", j)
		n, ok := nets[nic.Network]
		if !ok {
			add(nf+".network", "unknown network %q", nic.Network)
			continue
		}
		if nic.FixedIP != "" {
			ip, err := netip.ParseAddr(nic.FixedIP)
			if err != nil {
				add(nf+".fixedIP", "invalid IP %q", nic.FixedIP)
			} else if !inSubnets(ip, n.Subnets) {
				add(nf+".fixedIP", "%s is in no subnet of network %q", nic.FixedIP, nic.Network)
			}
		}
		if nic.FloatingNetwork != "" {
			if fn, ok := nets[nic.FloatingNetwork]; !ok || !fn.External {
				add(nf+".floatingNetwork", "%q is not an external network", nic.FloatingNetwork)
			}
		}
		if nic.FloatingIP != "" {
			if _, err := netip.ParseAddr(nic.FloatingIP); err != nil {
				add(nf+".floatingIP", "invalid IP %q", nic.FloatingIP)
			}
		}
	}
	return ps
}

func inSubnets(ip netip.Addr, subnets []SeedSubnet) bool {
	for _, sn := range subnets {
		if pf, err := netip.ParsePrefix(sn.CIDR); err == nil && pf.Contains(ip) {
			return true
		}
	}
	return false
}

package cloudsim

import (
	"fmt"
	"net/netip"
	"time"
)

// Router state shared by the seed, the Neutron API and the route checks:
// a router's interfaces are ports it owns, holding each subnet's gateway IP.

func (st *state) createRouter(id, name, projectID, extNet string) (*router, error) {
	now := time.Now()
	r := &router{ID: id, Name: name, ProjectID: projectID, Created: now, Updated: now, Revision: 1}
	if r.ID == "" {
		r.ID = newID()
	}
	if extNet != "" {
		ext := st.networkRef(extNet)
		if ext == nil || !ext.External {
			return nil, fmt.Errorf("external network %q: %w", extNet, ErrNotFound)
		}
		gp, err := st.createPort(portSpec{NetworkID: ext.ID, DeviceID: r.ID, DeviceOwner: "network:router_gateway"})
		if err != nil {
			return nil, fmt.Errorf("router %q gateway: %w", name, err)
		}
		r.GatewayNetID = ext.ID
		if len(gp.FixedIPs) > 0 {
			r.GatewayIP, r.GatewaySubnetID = gp.FixedIPs[0].IP, gp.FixedIPs[0].SubnetID
		}
	}
	st.routers.add(r.ID, r)
	return r, nil
}

// routerInterfaces returns the router's interface ports.
func (st *state) routerInterfaces(r *router) []*port {
	var out []*port
	for _, pid := range st.portsByDev[r.ID] {
		if p := st.ports.byID[pid]; p.DeviceOwner == "network:router_interface" {
			out = append(out, p)
		}
	}
	return out
}

// attachSubnet gives the router an interface holding the subnet's gateway IP.
func (st *state) attachSubnet(r *router, sn *subnet) (*port, error) {
	gw := mustAddr(sn.Gateway)
	for _, p := range st.ports.all() {
		for _, f := range p.FixedIPs {
			if f.SubnetID == sn.ID && f.IP == sn.Gateway {
				return nil, fmt.Errorf("the gateway %s of subnet %s is in use by port %s: %w", sn.Gateway, sn.ID, p.ID, ErrConflict)
			}
		}
	}
	delete(sn.used, gw) // reserved at subnet creation for this interface
	p, err := st.createPort(portSpec{NetworkID: sn.NetworkID, ProjectID: r.ProjectID, DeviceID: r.ID,
		DeviceOwner: "network:router_interface", FixedIPs: []fixedIP{{SubnetID: sn.ID, IP: sn.Gateway}}})
	if err != nil {
		sn.used[gw] = true
		return nil, err
	}
	r.Updated = time.Now()
	r.Revision++
	return p, nil
}

// detachPort removes an interface unless an extra route still needs it.
func (st *state) detachPort(r *router, p *port) error {
	for _, f := range p.FixedIPs {
		sn := st.subnets.byID[f.SubnetID]
		for _, rt := range r.Routes {
			if nh, err := netip.ParseAddr(rt.NextHop); err == nil && sn.prefix.Contains(nh) {
				return fmt.Errorf("router interface for subnet %s on router %s cannot be deleted, as it is required by one or more routes: %w", sn.ID, r.ID, ErrConflict)
			}
		}
	}
	ips := append([]fixedIP(nil), p.FixedIPs...)
	st.deletePort(p.ID)
	for _, f := range ips {
		if sn, ok := st.subnets.get(f.SubnetID); ok && f.IP == sn.Gateway {
			sn.used[mustAddr(f.IP)] = true // keep the gateway reserved
		}
	}
	r.Updated = time.Now()
	r.Revision++
	return nil
}

func (st *state) addSeedRouter(sr SeedRouter) error {
	projectID := ""
	if pr := st.projectRef(sr.Project); pr != nil {
		projectID = pr.ID
	}
	r, err := st.createRouter(sr.ID, sr.Name, projectID, sr.ExternalNetwork)
	if err != nil {
		return err
	}
	r.Routes = append([]Route(nil), sr.Routes...)
	for _, in := range sr.Interfaces {
		nw := st.networkRef(in)
		sn := st.subnetFor(nw, netip.Addr{})
		if sn == nil {
			continue
		}
		if _, err := st.attachSubnet(r, sn); err != nil {
			return fmt.Errorf("router %q interface on %q: %w", sr.Name, in, err)
		}
	}
	return nil
}

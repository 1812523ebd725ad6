package cloudsim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The Nova metadata service and config drive: what stackward-node reads on
// a VM to learn its instance UUID, name, AZ and addresses. Like Nova's, the
// service picks the instance from the caller's source address (each lab
// node has its own 198.18.x.y), or, in tests, from X-Stackward-Instance-ID.

// InstanceHeader selects the instance in metadata requests, overriding the
// source address.
const InstanceHeader = "X-Stackward-Instance-ID"

var metadataVersions = []string{"2012-08-10", "2013-04-04", "2013-10-17", "2015-10-15", "2016-06-30", "2016-10-06", "2017-02-22", "2018-08-27", "2020-10-14", "latest"}

func (s *Sim) routesMetadata(mux *http.ServeMux) {
	o := func(name string) op { return op{service: ServiceMetadata, name: name, anonymous: true} }
	s.handle(mux, "GET /openstack", o("openstack.versions"), func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Join(metadataVersions, "\n"))
	})
	s.handle(mux, "GET /openstack/{version}/{file}", o("openstack.file"), s.openstackFile)
	s.handle(mux, "GET /openstack/{version}/{$}", o("openstack.index"), func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "meta_data.json\nnetwork_data.json\nuser_data\nvendor_data.json\nvendor_data2.json")
	})
	for _, v := range []string{"latest", "2009-04-04"} {
		s.handle(mux, "GET /"+v+"/meta-data/{key...}", o("ec2.meta-data"), s.ec2MetaData)
		s.handle(mux, "GET /"+v+"/user-data", o("ec2.user-data"), func(w http.ResponseWriter, r *http.Request) {
			s.withInstance(w, r, func(md instanceData) {
				if md.userData == "" {
					http.NotFound(w, r)
					return
				}
				fmt.Fprint(w, md.userData)
			})
		})
	}
}

// instanceData is everything the metadata service serves for one server.
type instanceData struct {
	metaData    map[string]any
	networkData map[string]any
	userData    string
	ec2         map[string]string
}

func (s *Sim) withInstance(w http.ResponseWriter, r *http.Request, fn func(instanceData)) {
	s.mu.RLock()
	sv := s.instanceFor(r)
	var md instanceData
	if sv != nil {
		md = s.instanceData(sv)
	}
	s.mu.RUnlock()
	if sv == nil {
		http.Error(w, "404 Not Found: no instance has the address of this request", http.StatusNotFound)
		return
	}
	fn(md)
}

func (s *Sim) instanceFor(r *http.Request) *server {
	st := s.state
	if id := r.Header.Get(InstanceHeader); id != "" {
		sv, _ := st.servers.get(id)
		return sv
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return nil
	}
	want := ip.Unmap().String()
	for _, p := range st.ports.all() {
		for _, f := range p.FixedIPs {
			if f.IP == want {
				sv, _ := st.servers.get(p.DeviceID)
				return sv
			}
		}
	}
	return nil
}

var hostnameRE = regexp.MustCompile(`[^a-z0-9-]+`)

// hostname is Nova's sanitised instance hostname.
func hostname(name string) string {
	h := strings.Trim(hostnameRE.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if h == "" {
		h = "instance"
	}
	return h
}

func (s *Sim) instanceData(sv *server) instanceData {
	st := s.state
	keys := map[string]any{}
	var keyList []any
	if sv.PublicKey != "" {
		name := sv.KeyName
		if name == "" {
			name = "default"
		}
		keys[name] = sv.PublicKey
		keyList = append(keyList, map[string]any{"name": name, "type": "ssh", "data": sv.PublicKey})
	}
	meta := map[string]string{}
	for k, v := range sv.Metadata {
		meta[k] = v
	}
	md := map[string]any{
		"uuid": sv.ID, "name": sv.Name, "hostname": hostname(sv.Name) + ".novalocal", "launch_index": 0,
		"availability_zone": sv.AZ, "project_id": sv.ProjectID, "meta": meta, "public_keys": keys,
		"keys": keyList, "devices": []any{}, "dedicated_cpus": []any{},
		"random_seed": base64.StdEncoding.EncodeToString([]byte(sv.ID + sv.HostID)),
	}
	links, nets := []any{}, []any{}
	firstLocal, firstPublic := "", ""
	for i, p := range st.serverPorts(sv) {
		nw := st.networks.byID[p.NetworkID]
		tap := "tap" + p.ID[:11]
		links = append(links, map[string]any{"id": tap, "vif_id": p.ID, "type": "ovs", "mtu": nw.MTU, "ethernet_mac_address": p.MAC})
		for j, f := range p.FixedIPs {
			sn := st.subnets.byID[f.SubnetID]
			n := map[string]any{"id": fmt.Sprintf("network%d", i+j), "link": tap, "network_id": nw.ID,
				"ip_address": f.IP, "services": []any{}}
			if sn.IPVersion == 4 {
				n["type"], n["netmask"] = "ipv4", netmask(sn.prefix)
				if firstLocal == "" {
					firstLocal = f.IP
				}
			} else {
				n["type"], n["netmask"] = "ipv6", netmask(sn.prefix)
			}
			routes := []any{}
			if i == 0 && sn.Gateway != "" {
				dst, mask := "0.0.0.0", "0.0.0.0"
				if sn.IPVersion == 6 {
					dst, mask = "::", "::"
				}
				routes = append(routes, map[string]any{"network": dst, "netmask": mask, "gateway": sn.Gateway})
			}
			n["routes"] = routes
			nets = append(nets, n)
		}
		for _, f := range st.floatingByPort(p.ID) {
			if firstPublic == "" {
				firstPublic = f.IP
			}
		}
	}
	nd := map[string]any{"links": links, "networks": nets, "services": []any{map[string]any{"type": "dns", "address": "198.51.100.53"}}}
	flavorName := ""
	if fl, ok := st.flavors.get(sv.FlavorID); ok {
		flavorName = fl.Name
	}
	ec2 := map[string]string{
		"instance-id": "i-" + sv.ID[:8], "hostname": hostname(sv.Name) + ".novalocal", "local-hostname": hostname(sv.Name) + ".novalocal",
		"public-hostname": hostname(sv.Name) + ".novalocal", "local-ipv4": firstLocal, "public-ipv4": firstPublic,
		"placement/availability-zone": sv.AZ, "instance-type": flavorName, "ami-id": "ami-00000001",
		"ami-launch-index": "0", "reservation-id": "r-" + sv.ProjectID[:8], "security-groups": "default",
	}
	if sv.PublicKey != "" {
		ec2["public-keys/0/openssh-key"] = sv.PublicKey
	}
	return instanceData{metaData: md, networkData: nd, userData: sv.UserData, ec2: ec2}
}

func netmask(p netip.Prefix) string {
	bits := p.Bits()
	b := make([]byte, p.Addr().BitLen()/8)
	for i := 0; i < bits; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a.String()
}

func (s *Sim) openstackFile(w http.ResponseWriter, r *http.Request) {
	known := false
	for _, v := range metadataVersions {
		known = known || v == r.PathValue("version")
	}
	if !known {
		http.NotFound(w, r)
		return
	}
	s.withInstance(w, r, func(md instanceData) {
		switch r.PathValue("file") {
		case "meta_data.json":
			writeJSON(w, http.StatusOK, md.metaData)
		case "network_data.json":
			writeJSON(w, http.StatusOK, md.networkData)
		case "vendor_data.json", "vendor_data2.json":
			writeJSON(w, http.StatusOK, map[string]any{})
		case "user_data":
			if md.userData == "" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			fmt.Fprint(w, md.userData)
		default:
			http.NotFound(w, r)
		}
	})
}

func (s *Sim) ec2MetaData(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimSuffix(r.PathValue("key"), "/")
	s.withInstance(w, r, func(md instanceData) {
		w.Header().Set("Content-Type", "text/plain")
		if v, ok := md.ec2[key]; ok {
			fmt.Fprint(w, v)
			return
		}
		// A directory: list its children, as EC2 does.
		prefix := key
		if prefix != "" {
			prefix += "/"
		}
		seen := map[string]bool{}
		for k := range md.ec2 {
			if rest, ok := strings.CutPrefix(k, prefix); ok {
				head, _, dir := strings.Cut(rest, "/")
				if dir {
					head += "/"
				}
				seen[head] = true
			}
		}
		if len(seen) == 0 {
			http.NotFound(w, r)
			return
		}
		var out []string
		for k := range seen {
			out = append(out, k)
		}
		sort.Strings(out)
		fmt.Fprint(w, strings.Join(out, "\n"))
	})
}

// WriteConfigDrive writes the server's config drive tree (openstack/latest/
// meta_data.json, network_data.json, vendor_data.json, user_data, and
// ec2/latest/meta-data.json) under dir.
func (s *Sim) WriteConfigDrive(serverID, dir string) error {
	s.mu.RLock()
	sv, ok := s.state.servers.get(serverID)
	var md instanceData
	if ok {
		md = s.instanceData(sv)
	}
	s.mu.RUnlock()
	if !ok {
		return fmt.Errorf("config drive for %s: %w", serverID, ErrNotFound)
	}
	files := map[string]any{
		"openstack/latest/meta_data.json":    md.metaData,
		"openstack/latest/network_data.json": md.networkData,
		"openstack/latest/vendor_data.json":  map[string]any{},
		"ec2/latest/meta-data.json":          md.ec2,
	}
	for name, v := range files {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("config drive %s: %w", name, err)
		}
		if err := writeFile(filepath.Join(dir, name), b); err != nil {
			return err
		}
	}
	if md.userData != "" {
		return writeFile(filepath.Join(dir, "openstack/latest/user_data"), []byte(md.userData))
	}
	return nil
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("config drive: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("config drive: %w", err)
	}
	return nil
}

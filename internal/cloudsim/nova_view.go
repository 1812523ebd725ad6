package cloudsim

import (
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"strings"
)

// Nova's JSON views. The shape depends on the requested microversion, as in
// Nova: from 2.47 the server's flavor is embedded (with original_name)
// instead of referenced by ID.

type microversion struct{ major, minor int }

func (m microversion) atLeast(minor int) bool {
	return m.major > 2 || (m.major == 2 && m.minor >= minor)
}

// novaMicroversion reads X-OpenStack-Nova-API-Version or OpenStack-API-Version
// ("compute 2.47"); no header means 2.1, "latest" the maximum.
func novaMicroversion(r *http.Request) (microversion, error) {
	// The standard header wins over Nova's legacy one, as in
	// microversion-parse; it may name several services.
	v := ""
	for _, part := range strings.Split(r.Header.Get("OpenStack-API-Version"), ",") {
		if f := strings.Fields(part); len(f) == 2 && strings.EqualFold(f[0], "compute") {
			v = f[1]
		}
	}
	if v == "" {
		v = strings.TrimSpace(r.Header.Get("X-OpenStack-Nova-API-Version"))
	}
	if v == "" {
		return microversion{2, 1}, nil
	}
	if strings.EqualFold(v, "latest") {
		v = novaMaxMicroversion
	}
	maj, min, ok := strings.Cut(v, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil || a < 0 || b < 0 {
		return microversion{2, 1}, apiErr(http.StatusBadRequest, "", "API Version String %s is of invalid format. Must be of format MajorNum.MinorNum.", v)
	}
	mv := microversion{a, b}
	maxMinor, _ := strconv.Atoi(strings.TrimPrefix(novaMaxMicroversion, "2."))
	if a != 2 || b < 1 || b > maxMinor {
		return mv, apiErr(http.StatusNotAcceptable, "", "Version %d.%d is not supported by the API. Minimum is 2.1 and maximum is %s.", a, b, novaMaxMicroversion)
	}
	return mv, nil
}

func vmState(status string) (vm string, power int) {
	switch status {
	case "ACTIVE":
		return "active", 1
	case "SHUTOFF":
		return "stopped", 4
	case "BUILD":
		return "building", 0
	case "PAUSED":
		return "paused", 3
	case "SUSPENDED":
		return "suspended", 4
	default:
		return "error", 0
	}
}

func (s *Sim) serverLinks(base, id string) []map[string]any {
	return []map[string]any{
		link(base+computePrefix+"/v2.1/servers/"+id, "self"),
		link(base+computePrefix+"/servers/"+id, "bookmark"),
	}
}

// serverJSON is a server in Nova's detail form. It is a struct rather than
// a map because listing 10,000 servers is dominated by JSON encoding.
type serverJSON struct {
	ID             string                     `json:"id"`
	Name           string                     `json:"name"`
	Status         string                     `json:"status"`
	TenantID       string                     `json:"tenant_id"`
	UserID         string                     `json:"user_id"`
	Metadata       map[string]string          `json:"metadata"`
	HostID         string                     `json:"hostId"`
	Created        string                     `json:"created"`
	Updated        string                     `json:"updated"`
	Addresses      map[string][]serverAddress `json:"addresses"`
	AccessIPv4     string                     `json:"accessIPv4"`
	AccessIPv6     string                     `json:"accessIPv6"`
	Links          []map[string]any           `json:"links"`
	Progress       int                        `json:"progress"`
	Image          any                        `json:"image"`
	Flavor         map[string]any             `json:"flavor"`
	DiskConfig     string                     `json:"OS-DCF:diskConfig"`
	AZ             string                     `json:"OS-EXT-AZ:availability_zone"`
	TaskState      *string                    `json:"OS-EXT-STS:task_state"`
	VMState        string                     `json:"OS-EXT-STS:vm_state"`
	PowerState     int                        `json:"OS-EXT-STS:power_state"`
	LaunchedAt     *string                    `json:"OS-SRV-USG:launched_at"`
	TerminatedAt   *string                    `json:"OS-SRV-USG:terminated_at"`
	Host           string                     `json:"OS-EXT-SRV-ATTR:host"`
	Hypervisor     string                     `json:"OS-EXT-SRV-ATTR:hypervisor_hostname"`
	InstanceName   string                     `json:"OS-EXT-SRV-ATTR:instance_name"`
	Volumes        []string                   `json:"os-extended-volumes:volumes_attached"`
	SecurityGroups []map[string]string        `json:"security_groups"`
	KeyName        *string                    `json:"key_name"`
	ConfigDrive    string                     `json:"config_drive"`
	Locked         bool                       `json:"locked"`
	Tags           *[]string                  `json:"tags,omitempty"`        // microversion 2.26
	Description    json.RawMessage            `json:"description,omitempty"` // 2.19; "null"
}

type serverAddress struct {
	Addr    string `json:"addr"`
	Version int    `json:"version"`
	Type    string `json:"OS-EXT-IPS:type"`
	MAC     string `json:"OS-EXT-IPS-MAC:mac_addr"`
}

// serverView renders one server in Nova's detail form.
func (s *Sim) serverView(sv *server, base string, mv microversion, fips map[string][]*floatingIP) *serverJSON {
	st := s.state
	addrs := map[string][]serverAddress{}
	for _, a := range st.addresses(sv, fips) {
		addrs[a.Network] = append(addrs[a.Network], serverAddress{Addr: a.IP, Version: a.Version, Type: a.Type, MAC: a.MAC})
	}
	vm, power := vmState(sv.Status)
	v := &serverJSON{
		ID: sv.ID, Name: sv.Name, Status: sv.Status, TenantID: sv.ProjectID, UserID: sv.UserID,
		Metadata: maps.Clone(sv.Metadata), HostID: sv.HostID, Created: fmtTime(sv.Created, isoSeconds),
		Updated: fmtTime(sv.Updated, isoSeconds), Addresses: addrs, AccessIPv4: sv.AccessIPv4, AccessIPv6: sv.AccessIPv6,
		Links:  s.serverLinks(base, sv.ID),
		Image:  "", // booted from a volume
		Flavor: s.serverFlavor(sv.FlavorID, base, mv), DiskConfig: "MANUAL", AZ: sv.AZ, VMState: vm, PowerState: power,
		Host: "cloudsim-" + sv.AZ, Hypervisor: "cloudsim-" + sv.AZ, InstanceName: "instance-" + sv.ID[:8],
		Volumes: []string{}, SecurityGroups: []map[string]string{{"name": "default"}},
	}
	if sv.ImageID != "" {
		v.Image = map[string]any{"id": sv.ImageID, "links": []any{link(base+computePrefix+"/images/"+sv.ImageID, "bookmark")}}
	}
	if !sv.Launched.IsZero() {
		l := fmtTime(sv.Launched, isoMicros)
		v.LaunchedAt = &l
	}
	if sv.KeyName != "" {
		k := sv.KeyName
		v.KeyName = &k
	}
	if mv.atLeast(26) {
		v.Tags = &[]string{}
	}
	if mv.atLeast(19) {
		v.Description = json.RawMessage("null")
	}
	return v
}

func (s *Sim) serverFlavor(id, base string, mv microversion) map[string]any {
	fl, ok := s.state.flavors.get(id)
	if !mv.atLeast(47) {
		return map[string]any{"id": id, "links": []any{link(base+computePrefix+"/flavors/"+id, "bookmark")}}
	}
	if !ok {
		return map[string]any{"original_name": "deleted", "vcpus": 0, "ram": 0, "disk": 0, "ephemeral": 0, "swap": 0}
	}
	es := fl.ExtraSpecs
	if es == nil {
		es = map[string]string{}
	}
	return map[string]any{"original_name": fl.Name, "vcpus": fl.VCPUs, "ram": fl.RAM, "disk": fl.Disk,
		"ephemeral": fl.Ephemeral, "swap": fl.Swap, "extra_specs": es}
}

func (s *Sim) flavorView(fl *flavor, base string, mv microversion, detail bool) map[string]any {
	v := map[string]any{"id": fl.ID, "name": fl.Name, "links": []any{
		link(base+computePrefix+"/v2.1/flavors/"+fl.ID, "self"), link(base+computePrefix+"/flavors/"+fl.ID, "bookmark"),
	}}
	if mv.atLeast(55) {
		v["description"] = nil
	}
	if !detail {
		return v
	}
	var swap any = ""
	if fl.Swap != 0 || mv.atLeast(75) {
		swap = fl.Swap
	}
	v["ram"], v["vcpus"], v["disk"], v["swap"] = fl.RAM, fl.VCPUs, fl.Disk, swap
	v["OS-FLV-EXT-DATA:ephemeral"] = fl.Ephemeral
	v["OS-FLV-DISABLED:disabled"] = false
	v["os-flavor-access:is_public"] = true
	v["rxtx_factor"] = 1.0
	if mv.atLeast(61) {
		es := fl.ExtraSpecs
		if es == nil {
			es = map[string]string{}
		}
		v["extra_specs"] = es
	}
	return v
}

func (s *Sim) interfaceView(p *port) map[string]any {
	var ips []any
	for _, f := range p.FixedIPs {
		ips = append(ips, map[string]any{"subnet_id": f.SubnetID, "ip_address": f.IP})
	}
	return map[string]any{"port_state": p.Status, "port_id": p.ID, "net_id": p.NetworkID, "mac_addr": p.MAC, "fixed_ips": ips}
}

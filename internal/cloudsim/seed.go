package cloudsim

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Seed is the initial content of a simulated cloud, usually read from YAML
// with LoadSeed. Names are used for references between entries (a user's
// project, a server's flavor and networks); IDs are generated when empty.
type Seed struct {
	Projects               []SeedProject `yaml:"projects" json:"projects,omitempty"`
	Users                  []SeedUser    `yaml:"users" json:"users,omitempty"`
	ApplicationCredentials []SeedAppCred `yaml:"applicationCredentials" json:"applicationCredentials,omitempty"`
	Flavors                []SeedFlavor  `yaml:"flavors" json:"flavors,omitempty"`
	Images                 []SeedImage   `yaml:"images" json:"images,omitempty"`
	AvailabilityZones      []string      `yaml:"availabilityZones" json:"availabilityZones,omitempty"`
	Networks               []SeedNetwork `yaml:"networks" json:"networks,omitempty"`
	Routers                []SeedRouter  `yaml:"routers" json:"routers,omitempty"`
	Servers                []ServerSpec  `yaml:"servers" json:"servers,omitempty"`
	// LoadBalancerQuota is the number of Octavia load balancers a project may
	// own; 0 means unlimited.
	LoadBalancerQuota int `yaml:"loadBalancerQuota" json:"loadBalancerQuota,omitempty"`
}

// SeedProject is a Keystone project. Domain is a domain name or ID
// ("Default"/"default" when empty).
type SeedProject struct {
	Name   string `yaml:"name" json:"name"`
	ID     string `yaml:"id" json:"id,omitempty"`
	Domain string `yaml:"domain" json:"domain,omitempty"`
}

// SeedUser is a Keystone user with Roles on Project (its default project).
// Roles are admin, member, reader, load-balancer_member or
// load-balancer_observer; none means member and load-balancer_member.
type SeedUser struct {
	Name     string   `yaml:"name" json:"name"`
	ID       string   `yaml:"id" json:"id,omitempty"`
	Domain   string   `yaml:"domain" json:"domain,omitempty"`
	Password string   `yaml:"password" json:"password"`
	Project  string   `yaml:"project" json:"project"`
	Roles    []string `yaml:"roles" json:"roles,omitempty"`
}

// SeedAppCred is an application credential of User, bound to the user's
// project, with Roles (a subset of the user's; none means all of them).
type SeedAppCred struct {
	ID     string   `yaml:"id" json:"id,omitempty"`
	Name   string   `yaml:"name" json:"name"`
	Secret string   `yaml:"secret" json:"secret"`
	User   string   `yaml:"user" json:"user"`
	Roles  []string `yaml:"roles" json:"roles,omitempty"`
}

// SeedFlavor is a Nova flavor.
type SeedFlavor struct {
	ID         string            `yaml:"id" json:"id,omitempty"`
	Name       string            `yaml:"name" json:"name"`
	VCPUs      int               `yaml:"vcpus" json:"vcpus"`
	RAM        int               `yaml:"ram" json:"ram"` // MiB
	Disk       int               `yaml:"disk" json:"disk"`
	ExtraSpecs map[string]string `yaml:"extraSpecs" json:"extraSpecs,omitempty"`
}

// SeedImage is a Glance image; servers boot from the first one unless
// they name another. Visibility is public (default) or private to Project.
type SeedImage struct {
	ID         string `yaml:"id" json:"id,omitempty"`
	Name       string `yaml:"name" json:"name"`
	Project    string `yaml:"project" json:"project,omitempty"`
	Visibility string `yaml:"visibility" json:"visibility,omitempty"`
}

// SeedNetwork is a Neutron network with its subnets.
type SeedNetwork struct {
	Name     string       `yaml:"name" json:"name"`
	ID       string       `yaml:"id" json:"id,omitempty"`
	Project  string       `yaml:"project" json:"project,omitempty"`
	External bool         `yaml:"external" json:"external,omitempty"`
	MTU      int          `yaml:"mtu" json:"mtu,omitempty"`
	Subnets  []SeedSubnet `yaml:"subnets" json:"subnets,omitempty"`
}

// SeedSubnet is a Neutron subnet; Gateway defaults to the first address.
type SeedSubnet struct {
	Name      string `yaml:"name" json:"name,omitempty"`
	ID        string `yaml:"id" json:"id,omitempty"`
	CIDR      string `yaml:"cidr" json:"cidr"`
	IPVersion int    `yaml:"ipVersion" json:"ipVersion,omitempty"`
	Gateway   string `yaml:"gateway" json:"gateway,omitempty"`
	// Tags are Neutron tags (floating-subnet-tags picks subnets by them).
	Tags []string `yaml:"tags" json:"tags,omitempty"`
}

// SeedRouter is a Neutron router with an external gateway and interfaces on
// the named networks' first subnets.
type SeedRouter struct {
	Name            string   `yaml:"name" json:"name"`
	ID              string   `yaml:"id" json:"id,omitempty"`
	Project         string   `yaml:"project" json:"project,omitempty"`
	ExternalNetwork string   `yaml:"externalNetwork" json:"externalNetwork,omitempty"`
	Interfaces      []string `yaml:"interfaces" json:"interfaces,omitempty"`
	Routes          []Route  `yaml:"routes" json:"routes,omitempty"`
}

// Route is a Neutron router's extra route.
type Route struct {
	Destination string `yaml:"destination" json:"destination"`
	NextHop     string `yaml:"nexthop" json:"nexthop"`
}

// ServerSpec describes a server to create, in a seed or at run time.
type ServerSpec struct {
	Name       string            `yaml:"name" json:"name"`
	ID         string            `yaml:"id" json:"id,omitempty"`
	Project    string            `yaml:"project" json:"project,omitempty"` // first project when empty
	Flavor     string            `yaml:"flavor" json:"flavor,omitempty"`   // first flavor when empty
	Image      string            `yaml:"image" json:"image,omitempty"`     // first image when empty
	AZ         string            `yaml:"az" json:"az,omitempty"`           // first AZ when empty
	Status     string            `yaml:"status" json:"status,omitempty"`   // ACTIVE when empty
	Metadata   map[string]string `yaml:"metadata" json:"metadata,omitempty"`
	KeyName    string            `yaml:"keyName" json:"keyName,omitempty"`
	PublicKey  string            `yaml:"publicKey" json:"publicKey,omitempty"`
	UserData   string            `yaml:"userData" json:"userData,omitempty"`
	AccessIPv4 string            `yaml:"accessIPv4" json:"accessIPv4,omitempty"`
	AccessIPv6 string            `yaml:"accessIPv6" json:"accessIPv6,omitempty"`
	NICs       []NICSpec         `yaml:"nics" json:"nics,omitempty"`
}

// NICSpec is one port of a server. FloatingNetwork (an external network)
// gives the port a floating IP, FloatingIP picks its address.
type NICSpec struct {
	Network string `yaml:"network" json:"network"`
	FixedIP string `yaml:"fixedIP" json:"fixedIP,omitempty"`
	// FixedIPv6 is a second fixed IP of the port, on the network's IPv6
	// subnet (a dual-stack server with both addresses chosen).
	FixedIPv6       string `yaml:"fixedIPv6" json:"fixedIPv6,omitempty"`
	FloatingNetwork string `yaml:"floatingNetwork" json:"floatingNetwork,omitempty"`
	FloatingIP      string `yaml:"floatingIP" json:"floatingIP,omitempty"`
}

// DefaultSeed is a small cloud: project "demo" with user "demo"/"secret"
// (member, load-balancer_member), "admin"/"admin-secret" (admin),
// "viewer"/"viewer-secret" (reader) and "lb-observer"/"observer-secret"
// (load-balancer_observer) in the Default domain, image "debian-12", three flavors, AZ "nova", a private network
// 10.0.0.0/24, an external network "public" (203.0.113.0/24) and a router.
func DefaultSeed() *Seed {
	return &Seed{
		Projects: []SeedProject{{Name: "demo"}},
		Users: []SeedUser{
			{Name: "demo", Password: "secret", Project: "demo"},
			{Name: "admin", Password: "admin-secret", Project: "demo", Roles: []string{RoleAdmin}},
			{Name: "viewer", Password: "viewer-secret", Project: "demo", Roles: []string{RoleReader}},
			{Name: "lb-observer", Password: "observer-secret", Project: "demo", Roles: []string{RoleLBObserver}},
		},
		Flavors: []SeedFlavor{
			{ID: "1", Name: "m1.small", VCPUs: 1, RAM: 2048, Disk: 20},
			{ID: "2", Name: "m1.medium", VCPUs: 2, RAM: 4096, Disk: 40},
			{ID: "3", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 80},
		},
		Images:            []SeedImage{{ID: "5d0f8f3c-5e1e-4c1a-9b1e-0c0d5a1e0001", Name: "debian-12"}},
		AvailabilityZones: []string{"nova"},
		Networks: []SeedNetwork{
			{Name: "private", Subnets: []SeedSubnet{{Name: "private-subnet", CIDR: "10.0.0.0/24"}}},
			{Name: "public", External: true, Subnets: []SeedSubnet{{Name: "public-subnet", CIDR: "203.0.113.0/24"}}},
		},
		Routers: []SeedRouter{{Name: "router1", ExternalNetwork: "public", Interfaces: []string{"private"}}},
	}
}

// SeedError is a problem in a seed file, located by line and field path.
type SeedError struct {
	File  string
	Line  int    // 0 when unknown
	Field string // e.g. "servers[2].flavor"
	Msg   string
}

func (e *SeedError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: field %s: %s", loc, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

var yamlLineRE = regexp.MustCompile(`line (\d+): (.*)`)
var yamlUnknownFieldRE = regexp.MustCompile(`field (\S+) not found`)

// LoadSeed reads a YAML seed strictly: unknown fields, wrong types and
// dangling references are errors naming the file, the line and the field.
// All problems found are returned together.
func LoadSeed(path string) (*Seed, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read seed: %w", err)
	}
	return ParseSeed(path, data)
}

// ParseSeed is LoadSeed on bytes; name is used in error messages.
func ParseSeed(name string, data []byte) (*Seed, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, seedYAMLErrors(name, &root, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var sd Seed
	if err := dec.Decode(&sd); err != nil && err.Error() != "EOF" {
		return nil, seedYAMLErrors(name, &root, err)
	}
	lines := map[string]int{}
	indexNode(&root, "", lines)
	var errs []error
	for _, p := range validateSeed(&sd) {
		errs = append(errs, &SeedError{File: name, Line: lineOf(lines, p.field), Field: p.field, Msg: p.msg})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &sd, nil
}

// seedYAMLErrors turns yaml.v3's messages ("line 7: field flavour not found
// in type cloudsim.ServerSpec") into SeedErrors that also name the field path.
func seedYAMLErrors(name string, root *yaml.Node, err error) error {
	byLine := map[int]string{}
	lines := map[string]int{}
	indexNode(root, "", lines)
	for p, l := range lines {
		if cur, ok := byLine[l]; !ok || len(p) > len(cur) {
			byLine[l] = p
		}
	}
	var errs []error
	for _, m := range yamlLineRE.FindAllStringSubmatch(err.Error(), -1) {
		line, _ := strconv.Atoi(m[1])
		field := byLine[line]
		if u := yamlUnknownFieldRE.FindStringSubmatch(m[2]); u != nil {
			msg := "unknown field " + strconv.Quote(u[1])
			errs = append(errs, &SeedError{File: name, Line: line, Field: field, Msg: msg})
			continue
		}
		errs = append(errs, &SeedError{File: name, Line: line, Field: field, Msg: strings.TrimSpace(m[2])})
	}
	if len(errs) == 0 {
		return &SeedError{File: name, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	return errors.Join(errs...)
}

// indexNode records the line of every field path ("servers[0].nics[1].network").
func indexNode(n *yaml.Node, path string, lines map[string]int) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			indexNode(c, path, lines)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			lines[p] = k.Line
			indexNode(v, p, lines)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			lines[p] = c.Line
			indexNode(c, p, lines)
		}
	}
}

// lineOf finds the line of a field, or of its closest parent when the field
// is missing (a missing password is reported at its user).
func lineOf(lines map[string]int, field string) int {
	for field != "" {
		if l, ok := lines[field]; ok {
			return l
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			break
		}
		field = field[:i]
	}
	return 0
}

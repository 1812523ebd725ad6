package cloudsim

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// coll is an ordered collection keyed by ID: lookups are O(1), listing keeps
// creation order, and a marker's position is found without a scan so that
// paging through 10,000 servers stays linear. Deletion leaves a tombstone
// ("" in order) and compacts once half the slots are dead, so deleting
// many objects is linear too.
type coll[T any] struct {
	byID  map[string]*T
	order []string
	pos   map[string]int
	dead  int
}

func newColl[T any]() *coll[T] {
	return &coll[T]{byID: map[string]*T{}, pos: map[string]int{}}
}

func (c *coll[T]) add(id string, v *T) {
	c.byID[id] = v
	c.pos[id] = len(c.order)
	c.order = append(c.order, id)
}

func (c *coll[T]) get(id string) (*T, bool) { v, ok := c.byID[id]; return v, ok }

func (c *coll[T]) del(id string) {
	i, ok := c.pos[id]
	if !ok {
		return
	}
	delete(c.byID, id)
	delete(c.pos, id)
	c.order[i] = ""
	c.dead++
	if c.dead > 64 && c.dead*2 > len(c.order) {
		live := c.order[:0]
		for _, x := range c.order {
			if x != "" {
				c.pos[x] = len(live)
				live = append(live, x)
			}
		}
		clear(c.order[len(live):])
		c.order, c.dead = live, 0
	}
}

func (c *coll[T]) len() int { return len(c.byID) }

// at returns the object in slot i of order, or nil for a tombstone.
func (c *coll[T]) at(i int) *T {
	if c.order[i] == "" {
		return nil
	}
	return c.byID[c.order[i]]
}

// first returns the oldest object, or nil.
func (c *coll[T]) first() *T {
	for i := range c.order {
		if v := c.at(i); v != nil {
			return v
		}
	}
	return nil
}

// all returns the values in creation order.
func (c *coll[T]) all() []*T {
	out := make([]*T, 0, len(c.byID))
	for i := range c.order {
		if v := c.at(i); v != nil {
			out = append(out, v)
		}
	}
	return out
}

type domain struct{ ID, Name string }

type project struct{ ID, Name, DomainID string }

type user struct {
	ID, Name, DomainID, Password, ProjectID string
	Roles                                   []string // on ProjectID
}

type appCred struct {
	ID, Name, Secret, UserID, ProjectID string
	Roles                               []string // a subset of the user's
}

type flavor struct {
	ID, Name         string
	VCPUs, RAM, Disk int
	Ephemeral, Swap  int
	ExtraSpecs       map[string]string
}

type server struct {
	ID, Name, ProjectID, UserID, FlavorID, AZ, Status string
	ImageID                                           string // "" when booted from a volume
	KeyName, PublicKey, UserData                      string
	AccessIPv4, AccessIPv6, HostID                    string
	Metadata                                          map[string]string
	Created, Updated, Launched                        time.Time
	PortIDs                                           []string
}

type network struct {
	ID, Name, ProjectID string
	External, Shared    bool
	MTU                 int
	SubnetIDs           []string
	Created             time.Time
}

type subnet struct {
	ID, Name, NetworkID, ProjectID, CIDR, Gateway string
	IPVersion                                     int
	prefix                                        netip.Prefix
	used                                          map[netip.Addr]bool
	next                                          netip.Addr
	Created                                       time.Time
	Tags                                          []string
}

type fixedIP struct{ SubnetID, IP string }

type addrPair struct {
	IP  string `json:"ip_address"`
	MAC string `json:"mac_address,omitempty"`
}

type port struct {
	ID, Name, Description, NetworkID, ProjectID string
	DeviceID, DeviceOwner, MAC, Status          string
	FixedIPs                                    []fixedIP
	AllowedPairs                                []addrPair
	SecurityGroups                              []string
	AdminUp                                     bool
	Created, Updated                            time.Time
	Revision                                    int
	Tags                                        []string
}

type floatingIP struct {
	ID, ProjectID, NetworkID, IP, PortID, FixedIP, RouterID, Description string
	Created, Updated                                                     time.Time
	Revision                                                             int
}

type router struct {
	ID, Name, Description, ProjectID string
	GatewayNetID, GatewayIP          string
	GatewaySubnetID                  string
	Routes                           []Route
	Created, Updated                 time.Time
	Revision                         int
}

type secGroup struct {
	ID, Name, Description, ProjectID string
	Tags                             []string
	Created                          time.Time
}

type secRule struct {
	ID, GroupID, ProjectID, Direction, Ethertype, Protocol string
	PortMin, PortMax                                       *int
	RemoteIPPrefix, RemoteGroupID, Description             string
	Created                                                time.Time
}

// state is the whole cloud; Sim.mu guards it.
type state struct {
	region string
	closed bool

	domains  map[string]*domain
	projects *coll[project]
	users    *coll[user]
	appCreds *coll[appCred]
	tokens   map[string]*token

	flavors *coll[flavor]
	images  *coll[image]
	azs     []string
	servers *coll[server]

	networks   *coll[network]
	subnets    *coll[subnet]
	ports      *coll[port]
	portsByDev map[string][]string
	fips       *coll[floatingIP]
	routers    *coll[router]
	secGroups  *coll[secGroup]
	secRules   *coll[secRule]
	trunks     *coll[trunk]

	lb      *octaviaState
	kms     *barbicanState // Barbican
	lbQuota int

	macSeq uint32
}

func newState(sd *Seed, region string) (*state, error) {
	if ps := validateSeed(sd); len(ps) > 0 {
		var msgs []string
		for _, p := range ps {
			msgs = append(msgs, p.field+": "+p.msg)
		}
		return nil, fmt.Errorf("invalid seed: %s", strings.Join(msgs, "; "))
	}
	st := &state{
		region:     region,
		domains:    map[string]*domain{"default": {ID: "default", Name: "Default"}},
		projects:   newColl[project](),
		users:      newColl[user](),
		appCreds:   newColl[appCred](),
		tokens:     map[string]*token{},
		flavors:    newColl[flavor](),
		images:     newColl[image](),
		servers:    newColl[server](),
		networks:   newColl[network](),
		subnets:    newColl[subnet](),
		ports:      newColl[port](),
		portsByDev: map[string][]string{},
		fips:       newColl[floatingIP](),
		routers:    newColl[router](),
		secGroups:  newColl[secGroup](),
		secRules:   newColl[secRule](),
		trunks:     newColl[trunk](),
		lb:         newOctaviaState(),
		kms:        newBarbicanState(),
		lbQuota:    sd.LoadBalancerQuota,
		azs:        append([]string(nil), sd.AvailabilityZones...),
	}
	if len(st.azs) == 0 {
		st.azs = []string{"nova"}
	}
	for _, p := range sd.Projects {
		pr := &project{ID: p.ID, Name: p.Name, DomainID: st.domainFor(p.Domain).ID}
		if pr.ID == "" {
			pr.ID = newHexID()
		}
		st.projects.add(pr.ID, pr)
		st.addDefaultSecGroup(pr.ID)
	}
	for _, u := range sd.Users {
		us := &user{ID: u.ID, Name: u.Name, DomainID: st.domainFor(u.Domain).ID, Password: u.Password, Roles: u.Roles}
		if len(us.Roles) == 0 {
			us.Roles = defaultRoles
		}
		if us.ID == "" {
			us.ID = newHexID()
		}
		if p := st.projectRef(u.Project); p != nil {
			us.ProjectID = p.ID
		}
		st.users.add(us.ID, us)
	}
	for _, a := range sd.ApplicationCredentials {
		u := st.userRef(a.User)
		ac := &appCred{ID: a.ID, Name: a.Name, Secret: a.Secret, UserID: u.ID, ProjectID: u.ProjectID, Roles: a.Roles}
		if len(ac.Roles) == 0 {
			ac.Roles = u.Roles
		}
		if ac.ID == "" {
			ac.ID = newHexID()
		}
		st.appCreds.add(ac.ID, ac)
	}
	for _, f := range sd.Flavors {
		fl := &flavor{ID: f.ID, Name: f.Name, VCPUs: f.VCPUs, RAM: f.RAM, Disk: f.Disk, ExtraSpecs: f.ExtraSpecs}
		if fl.ID == "" {
			fl.ID = newID()
		}
		st.flavors.add(fl.ID, fl)
	}
	for _, im := range sd.Images {
		st.addSeedImage(im)
	}
	for _, n := range sd.Networks {
		if _, err := st.addNetwork(n); err != nil {
			return nil, err
		}
	}
	for _, r := range sd.Routers {
		if err := st.addSeedRouter(r); err != nil {
			return nil, err
		}
	}
	for i, sp := range sd.Servers {
		if _, err := st.createServer(sp); err != nil {
			return nil, fmt.Errorf("seed servers[%d] %q: %w", i, sp.Name, err)
		}
	}
	return st, nil
}

// domainFor finds a domain by ID or name, creating it for a new name.
func (st *state) domainFor(ref string) *domain {
	if ref == "" {
		return st.domains["default"]
	}
	for _, d := range st.domains {
		if d.ID == ref || d.Name == ref {
			return d
		}
	}
	d := &domain{ID: strings.ToLower(strings.ReplaceAll(ref, " ", "-")), Name: ref}
	st.domains[d.ID] = d
	return d
}

func (st *state) findDomain(id, name string) *domain {
	for _, d := range st.domains {
		if (id != "" && d.ID == id) || (id == "" && name != "" && d.Name == name) {
			return d
		}
	}
	return nil
}

// byRef finds an object by ID, else by name; an empty ref is the oldest
// (the seed's default project, flavor or image).
func byRef[T any](c *coll[T], ref string, name func(*T) string) *T {
	if ref == "" {
		return c.first()
	}
	if v, ok := c.get(ref); ok {
		return v
	}
	for _, v := range c.all() {
		if name(v) == ref {
			return v
		}
	}
	return nil
}

// projectRef finds a project by ID or name (the first when ref is empty).
func (st *state) projectRef(ref string) *project {
	return byRef(st.projects, ref, func(p *project) string { return p.Name })
}

func (st *state) userRef(ref string) *user {
	if ref == "" {
		return nil
	}
	return byRef(st.users, ref, func(u *user) string { return u.Name })
}

func (st *state) flavorRef(ref string) *flavor {
	return byRef(st.flavors, ref, func(f *flavor) string { return f.Name })
}

func (st *state) addSeedImage(sd SeedImage) {
	im := &image{ID: sd.ID, Name: sd.Name, Visibility: sd.Visibility, DiskFormat: "qcow2", ContainerFormat: "bare",
		Size: 335544320, MinDisk: 1, Created: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)}
	if im.ID == "" {
		im.ID = newID()
	}
	if im.Visibility == "" {
		im.Visibility = "public"
	}
	if p := st.projectRef(sd.Project); p != nil {
		im.ProjectID = p.ID
	}
	st.images.add(im.ID, im)
}

func (st *state) imageRef(ref string) *image {
	return byRef(st.images, ref, func(im *image) string { return im.Name })
}

func (st *state) networkRef(ref string) *network {
	if ref == "" {
		return nil
	}
	return byRef(st.networks, ref, func(n *network) string { return n.Name })
}

func (st *state) nextMAC() string {
	st.macSeq++
	v := st.macSeq
	return fmt.Sprintf("fa:16:3e:%02x:%02x:%02x", byte(v>>16), byte(v>>8), byte(v))
}

func (st *state) addDefaultSecGroup(projectID string) {
	sg := &secGroup{ID: newID(), Name: "default", Description: "Default security group", ProjectID: projectID, Created: time.Now()}
	st.secGroups.add(sg.ID, sg)
	for _, eth := range []string{"IPv4", "IPv6"} {
		for _, dir := range []string{"ingress", "egress"} {
			r := &secRule{ID: newID(), GroupID: sg.ID, ProjectID: projectID, Direction: dir, Ethertype: eth, Created: sg.Created}
			if dir == "ingress" {
				r.RemoteGroupID = sg.ID
			}
			st.secRules.add(r.ID, r)
		}
	}
}

func (st *state) defaultSecGroup(projectID string) string {
	for _, g := range st.secGroups.all() {
		if g.ProjectID == projectID && g.Name == "default" {
			return g.ID
		}
	}
	return ""
}

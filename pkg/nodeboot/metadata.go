package nodeboot

import (
	"encoding/json"
	"fmt"
	"strings"
)

// File names inside openstack/latest/ of both the metadata service and the
// config drive.
const (
	metaDataFile    = "meta_data.json"
	networkDataFile = "network_data.json"
	latestPath      = "openstack/latest"
)

// MetaData is the part of openstack/latest/meta_data.json that matters for a
// node. Unknown fields (keys, random_seed, ...) are ignored.
type MetaData struct {
	UUID             string `json:"uuid"`
	Name             string `json:"name"`
	Hostname         string `json:"hostname"`
	AvailabilityZone string `json:"availability_zone"`
	ProjectID        string `json:"project_id"`
	// Meta is the server's user metadata; unused here, and kept loose so
	// that an odd value in it cannot stop a node from joining.
	Meta    map[string]any `json:"meta"`
	Devices []Device       `json:"devices"`
}

// Device is one entry of meta_data.json "devices" (Nova device tagging). A
// NIC booted with --nic net-id=...,tag=T appears as {type: nic, mac, tags: [T]},
// which is how a node can name its networks without calling Neutron.
type Device struct {
	Type string   `json:"type"`
	Bus  string   `json:"bus"`
	MAC  string   `json:"mac"`
	Tags []string `json:"tags"`
}

// NetworkData is openstack/latest/network_data.json.
type NetworkData struct {
	Links    []Link    `json:"links"`
	Networks []Network `json:"networks"`
	Services []Service `json:"services"`
}

// Link is a layer-2 interface of the instance.
type Link struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	MAC        string `json:"ethernet_mac_address"`
	MTU        int    `json:"mtu"`
	VIFID      string `json:"vif_id"`
	VLANMAC    string `json:"vlan_mac_address"`
	VLANLink   string `json:"vlan_link"`
	VLANID     int    `json:"vlan_id"`
	BondLinks  []any  `json:"bond_links"`
	BondMode   string `json:"bond_mode"`
	BondMIIMon int    `json:"bond_miimon"`
}

// mac returns the MAC the guest sees for this link (a VLAN sub-interface has
// its own).
func (l Link) mac() string {
	if l.VLANMAC != "" {
		return strings.ToLower(l.VLANMAC)
	}
	return strings.ToLower(l.MAC)
}

// Network is one layer-3 configuration on a link. Type is ipv4, ipv6,
// ipv4_dhcp, ipv6_dhcp, ipv6_slaac, ipv6_dhcpv6-stateful or
// ipv6_dhcpv6-stateless; only the static types carry ip_address.
type Network struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Link      string    `json:"link"`
	IPAddress string    `json:"ip_address"`
	Netmask   string    `json:"netmask"`
	Prefix    *int      `json:"prefix"`
	NetworkID string    `json:"network_id"`
	Routes    []Route   `json:"routes"`
	Services  []Service `json:"services"`
}

// Route is a static route of a network.
type Route struct {
	Network string `json:"network"`
	Netmask string `json:"netmask"`
	Gateway string `json:"gateway"`
}

// Service is a DNS server or similar announced by network_data.json.
type Service struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// Instance is everything one source said about this machine.
type Instance struct {
	Source  string // "metadataService" or "configDrive"
	Origin  string // URL or directory the data came from, for messages
	Meta    MetaData
	Network NetworkData
}

// decodeMetaData parses and validates meta_data.json; origin names the URL
// or file in errors.
func decodeMetaData(b []byte, origin string) (MetaData, error) {
	var md MetaData
	if err := json.Unmarshal(b, &md); err != nil {
		return md, fmt.Errorf("decode %s: %w: %w", origin, ErrInvalidMetadata, err)
	}
	if strings.TrimSpace(md.UUID) == "" {
		return md, fmt.Errorf("%s: field %q is missing or empty: %w", origin, "uuid", ErrInvalidMetadata)
	}
	if !safeValue.MatchString(md.UUID) {
		return md, fmt.Errorf("%s: field %q is %q, not a server ID: %w", origin, "uuid", md.UUID, ErrInvalidMetadata)
	}
	return md, nil
}

// decodeNetworkData parses and validates network_data.json.
func decodeNetworkData(b []byte, origin string) (NetworkData, error) {
	var nd NetworkData
	if err := json.Unmarshal(b, &nd); err != nil {
		return nd, fmt.Errorf("decode %s: %w: %w", origin, ErrInvalidMetadata, err)
	}
	if len(nd.Networks) == 0 {
		return nd, fmt.Errorf("%s: field %q is missing or empty: %w", origin, "networks", ErrInvalidMetadata)
	}
	links := map[string]bool{}
	for _, l := range nd.Links {
		links[l.ID] = true
	}
	for i, n := range nd.Networks {
		if n.Type == "" {
			return nd, fmt.Errorf("%s: networks[%d] (id %q): field %q is missing: %w", origin, i, n.ID, "type", ErrInvalidMetadata)
		}
		if n.Link != "" && !links[n.Link] {
			return nd, fmt.Errorf("%s: networks[%d] (id %q): link %q is not in %q: %w", origin, i, n.ID, n.Link, "links", ErrInvalidMetadata)
		}
	}
	return nd, nil
}

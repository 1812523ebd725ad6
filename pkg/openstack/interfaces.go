package openstack

import "context"

// Compute is the part of Nova Stackward uses.
type Compute interface {
	// GetServer returns one server; a server that does not exist (or is
	// deleted) is ErrNotFound.
	GetServer(ctx context.Context, id string) (*Server, error)
	// ListServers returns every server that matches, following pagination.
	ListServers(ctx context.Context, opts ListServersOpts) ([]Server, error)
}

// Network is the part of Neutron Stackward uses.
type Network interface {
	// ListPorts returns the ports attached to the device (a server ID).
	ListPorts(ctx context.Context, deviceID string) ([]Port, error)
}

package framework

import "testing"

// The simulator's former names (issue 31 renamed them to one scheme, see
// doc.go), kept only so that e2e/bench and e2e/realcloud, which other
// branches are changing, and e2e tests written meanwhile still build.
// Remove this file once nothing uses them:
//
//	sed -i -E 's/\bframework\.Cloud\b/framework.SimCloud/g; s/\bStartCloud\b/StartSimCloud/g;
//	  s/\bNewCloud\b/NewSimCloud/g; s/\bCloudOptions\b/SimCloudOptions/g; s/\.Backend\(\)/.TestCloud()/g'

// Cloud is SimCloud's former name.
type Cloud = SimCloud

// CloudOptions is SimCloudOptions' former name.
type CloudOptions = SimCloudOptions

// StartCloud is StartSimCloud's former name.
func StartCloud(t testing.TB, opts SimCloudOptions) *SimCloud {
	t.Helper()
	return StartSimCloud(t, opts)
}

// NewCloud is NewSimCloud's former name.
func NewCloud(opts SimCloudOptions) (*SimCloud, func(), error) { return NewSimCloud(opts) }

// Backend is TestCloud's former name.
func (c *SimCloud) Backend() SimTestCloud { return c.TestCloud() }

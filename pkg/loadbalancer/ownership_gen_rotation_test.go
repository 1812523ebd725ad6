package loadbalancer_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gophers "github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/stackward/stackward/internal/cloudsim"
	"github.com/stackward/stackward/pkg/config"
	"github.com/stackward/stackward/pkg/openstack"
)

// The operator rotating cluster Y's cloud credential while Keystone fails
// (invariant 6). Y has a Keystone user of its own in the shared project,
// so that the rotation touches neither X's credential nor the raw clients
// the checks read the cloud with.

const yUser = "ccm-y"

func yPassword(rotation int) string { return fmt.Sprintf("y-secret-%d", rotation) }

// yCredential is Y's credential as its CCM has it: the cloud.conf mounted
// from a Secret, the clients Y's Managers are built on (shared by its two
// CCMs, as adapters are in this test), and the credential watch that moves
// those clients to a rotated password. The CCM runs the watch every
// openstack.CredentialsPollPeriod; the test calls its Check as that tick.
type yCredential struct {
	path      string
	authURL   string
	global    config.Global // what the cloud.conf holds now
	rotations int
	clients   *openstack.Clients
	watch     *openstack.CredentialWatch
}

func newYCredential(ctx context.Context, dir, authURL string) (*yCredential, error) {
	y := &yCredential{path: filepath.Join(dir, "cloud.conf"), authURL: authURL}
	if err := y.write(yPassword(0)); err != nil {
		return nil, err
	}
	cfg, _, err := config.Load(y.path)
	if err != nil {
		return nil, err
	}
	// As X's: a hang costs 700 ms, and a blip is retried once.
	if y.clients, err = openstack.NewClients(ctx, cfg, openstack.ClientOptions{HTTPTimeout: 700 * time.Millisecond,
		Retry: openstack.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Millisecond}}); err != nil {
		return nil, fmt.Errorf("Y's clients: %w", err)
	}
	y.global = cfg.Global
	y.watch = openstack.NewCredentialWatch(y.path, y.clients, cfg.Global)
	return y, nil
}

// write puts a cloud.conf with password into place as the kubelet updates
// a Secret volume: a new file swapped in.
func (y *yCredential) write(password string) error {
	conf := fmt.Sprintf("[Global]\nauth-url = %s\nusername = %s\npassword = %s\ndomain-name = Default\ntenant-name = demo\n", y.authURL, yUser, password)
	tmp := y.path + ".new"
	if err := os.WriteFile(tmp, []byte(conf), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, y.path); err != nil {
		return err
	}
	y.global.Password = password
	return nil
}

// genOutages are Keystone's failures during a rotation, each bounded in
// token requests. Each is at least two requests, so that the watch's first
// check of the new password fails even with the Caller's one retry: that
// check is the one a watch remembering a transient failure as a refusal
// would never repeat.
var genOutages = []cloudsim.FaultRule{
	{Status: http.StatusServiceUnavailable, Times: 2},
	{Status: http.StatusServiceUnavailable, Times: 5},
	{Status: http.StatusInternalServerError, NoRequestID: true, Times: 3}, // a proxy in front of Keystone
	{Status: http.StatusTooManyRequests, Times: 2},
	{Hang: true, Times: 2}, // past the clients' timeout: 1.4 s
}

func outageString(f cloudsim.FaultRule) string {
	what := fmt.Sprintf("%d", f.Status)
	switch {
	case f.Hang:
		what = "hang"
	case f.NoRequestID:
		what += " from a proxy"
	}
	return fmt.Sprintf("%d token requests answered %s", f.Times, what)
}

// rotateY is the operator rotating Y's password in its worst order while
// Keystone fails token requests: Keystone first, which revokes Y's tokens,
// then the Secret. Until the watch takes the new password every call of Y
// fails authentication, and Y's service controller goes on syncing every
// Service meanwhile, once between two checks, a deleted one included.
func (w *world) rotateY(s *step, outage cloudsim.FaultRule, rt *rand.Rand) string {
	ctx := context.Background()
	y, sim := w.c.y, w.c.sim
	fail := func(format string, args ...any) string {
		s.violations = append(s.violations, fmt.Sprintf(format, args...))
		return "broken: " + fmt.Sprintf(format, args...)
	}
	outage.Service, outage.Operation = cloudsim.ServiceIdentity, "tokens.create"
	if err := sim.SetFault(outage); err != nil {
		return fail("set the Keystone outage: %v", err)
	}
	old := y.global
	y.rotations++
	password := yPassword(y.rotations)
	if err := sim.SetPassword(yUser, password); err != nil {
		return fail("rotate in Keystone: %v", err)
	}
	if err := y.write(password); err != nil {
		return fail("rotate in the Secret: %v", err)
	}

	before, refs := w.snap, slices.Sorted(maps.Keys(w.ySvcs))
	var pending []string
	// Half the time a namespace user deletes a Service meanwhile: its
	// delete must wait for Y to authenticate again, and never take the
	// failure for "already gone".
	if len(refs) > 0 && rt.Intn(2) == 0 {
		ref := refs[rt.Intn(len(refs))]
		w.ySvcs[ref].deleting = true
		pending = append(pending, "user deletes "+ref)
	}
	took, checks := false, 0
	// Keystone fails at least one token request of every check while it is
	// down, so it is up again after outage.Times checks at the latest; the
	// rest of the outage, if any, is cleared then, and the next check must
	// take the new password.
	for !took && checks <= outage.Times {
		if checks == outage.Times {
			sim.ClearFaults()
		}
		checks++
		if took = y.watch.Check(ctx); !took {
			for _, ref := range slices.Sorted(maps.Keys(w.ySvcs)) {
				pending = append(pending, ref+": "+w.syncY(s, ref, rt))
			}
		}
	}
	sim.ClearFaults()
	mid, err := w.c.snapshot()
	if err != nil {
		return fail("snapshot after the outage: %v", err)
	}
	s.violations = append(s.violations, w.unchangedWhilePending(before, mid, refs)...)
	if !took {
		return fail("invariant 6: Keystone answered again (after failing %d token requests), yet the credential watch's check %d did not take the new password: a transient failure was taken for a refusal; Y's syncs meanwhile: [%s]",
			outage.Times, checks, strings.Join(pending, "; "))
	}

	// Recovered: one sync of every Service authenticates.
	var after []string
	for _, ref := range slices.Sorted(maps.Keys(w.ySvcs)) {
		res := w.syncY(s, ref, rt)
		after = append(after, ref+": "+res)
		if authFailure(w.syncErr) {
			s.violations = append(s.violations, fmt.Sprintf("invariant 6: after Keystone recovered and the new password was taken, %s's sync still failed authentication: %s", ref, res))
		}
	}
	// On the new password: the old one is refused, and once Y's tokens are
	// revoked again the clients still work, so they authenticate with the
	// new one.
	if _, err := gophers.AuthenticatedClient(ctx, openstack.AuthOptions(old)); !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
		s.violations = append(s.violations, fmt.Sprintf("invariant 6: authenticating with Y's old password answered %v, want 401", err))
	}
	if err := sim.SetPassword(yUser, password); err != nil {
		return fail("revoke Y's tokens: %v", err)
	}
	if _, err := y.clients.Neutron.ExternalNetworks(ctx); err != nil {
		s.violations = append(s.violations, fmt.Sprintf("invariant 6: Y's clients do not work with their tokens revoked, so they are not on the new password: %v", err))
	}
	return fmt.Sprintf("new password taken at check %d; pending: [%s]; after: [%s]", checks, strings.Join(pending, "; "), strings.Join(after, "; "))
}

// unchangedWhilePending is the first half of invariant 6: while Y could
// not authenticate, nothing in the cloud changed, and no Service of Y was
// let go (its finalizer removed) while its load balancer is still there:
// an authentication failure is not "not found".
func (w *world) unchangedWhilePending(before, mid *snapshot, refs []string) []string {
	var v []string
	for id, b := range before.lbs {
		if a, ok := mid.lbs[id]; !ok {
			v = append(v, fmt.Sprintf("invariant 6: %s's load balancer was deleted while Y could not authenticate: %s", w.owner[id], b))
		} else if a.String() != b.String() {
			v = append(v, fmt.Sprintf("invariant 6: %s's load balancer changed while Y could not authenticate:\n      before %s\n      after  %s", w.owner[id], b, a))
		}
	}
	for id, b := range before.fips {
		if a, ok := mid.fips[id]; !ok {
			v = append(v, fmt.Sprintf("invariant 6: %s's floating IP was released while Y could not authenticate: %s", w.fipOwner[id], fipString(b)))
		} else if fipString(a) != fipString(b) {
			v = append(v, fmt.Sprintf("invariant 6: %s's floating IP changed while Y could not authenticate: %s → %s", w.fipOwner[id], fipString(b), fipString(a)))
		}
	}
	for id, b := range before.groups {
		if a, ok := mid.groups[id]; !ok || a.String() != b.String() {
			v = append(v, fmt.Sprintf("invariant 6: %s's security group was deleted or changed while Y could not authenticate: %s", w.groupOwner[id], b))
		}
	}
	for id, b := range before.ports {
		if a, ok := mid.ports[id]; ok && !slices.Equal(slices.Sorted(slices.Values(a.SecurityGroups)), slices.Sorted(slices.Values(b.SecurityGroups))) {
			v = append(v, fmt.Sprintf("invariant 6: the security groups of port %s changed while Y could not authenticate: %v → %v", id, b.SecurityGroups, a.SecurityGroups))
		}
	}
	for _, ref := range refs {
		if w.ySvcs[ref] != nil {
			continue
		}
		if id := w.lbOfIn(mid, ref); id != "" {
			v = append(v, fmt.Sprintf("invariant 6: %s was let go while Y could not authenticate, its load balancer %s still there", ref, id))
		}
	}
	return v
}

// authFailure says whether err is Keystone's or a service's refusal of Y's
// credentials or token, or a failure to get a token at all.
func authFailure(err error) bool {
	var reauth *gophercloud.ErrUnableToReauthenticate
	return err != nil && (errors.As(err, &reauth) || gophercloud.ResponseCodeIs(err, http.StatusUnauthorized))
}

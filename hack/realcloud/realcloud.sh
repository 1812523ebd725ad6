#!/usr/bin/env bash
# Real OpenStack (Debian bookworm's Zed packages) for the e2e lab.
#
#   realcloud.sh up STATE_DIR     configure and start every service, seed the
#                                 lab's cloud, write STATE_DIR/cloud.json
#   realcloud.sh down STATE_DIR   stop every process it started, by PID
#   realcloud.sh respawn STATE_DIR NAME
#                                 start service NAME again, exactly as `up`
#                                 started it (after a fault stopped it)
#
# `up` runs INSIDE an already-entered private network and mount namespace (the
# e2e lab, or `make realcloud`'s own): every listener is on REALCLOUD_IP there
# and nothing reaches outside. All state, configuration and logs live in
# STATE_DIR. A failed start names the service, prints its log tail and stops
# everything started so far.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
IP=${REALCLOUD_IP:-198.18.254.2}
REGION=${REALCLOUD_REGION:-RegionOne}
# The system Python owns the OpenStack dist-packages; a pyenv or venv python3
# earlier in PATH has none of them.
SYS_PATH=/usr/sbin:/usr/bin:/sbin:/bin
DB_PASS=lab-db
RABBIT_PASS=lab-rabbit
SVC_PASS=service-password
ADMIN_PASS=admin-password
# Compute hosts: each a nova-compute with the fake driver and an OVN chassis
# of the same name, in its own availability zone.
HOSTS=(compute-1 compute-2)
# name:port of every listener, checked free before anything starts.
PORTS=(mariadb:3306 rabbitmq:5672 rabbitmq-dist:25672 ovn-nb:6641 ovn-sb:6642
  keystone:5000 glance:9292 placement:8778 nova-api:8774 neutron:9696 octavia-api:9876
  octavia-health-manager:5555)

die() {
  echo "real cloud: $*" >&2
  exit 1
}

log() { echo "real cloud: $(date +%T) $*" >&2; }

usage() { die "usage: $0 up|down STATE_DIR, or $0 respawn STATE_DIR NAME"; }

# --- processes ---------------------------------------------------------------

# start NAME CMD...: runs CMD in a session of its own (so `down` reaches its
# children through the process group) with the system PATH, logging to
# log/NAME.log, and records its PID in pids/NAME and its command in
# cmds/NAME (for respawn).
start() {
  local name=$1
  shift
  {
    printf 'EXTRA_ENV=('
    ((${#EXTRA_ENV[@]})) && printf '%q ' "${EXTRA_ENV[@]}"
    printf ')\nCMD=('
    printf '%q ' "$@"
    printf ')\n'
  } >"$S/cmds/$name"
  setsid env -i PATH=$SYS_PATH HOME="$S/home" LANG=C.UTF-8 LC_ALL=C.UTF-8 "${EXTRA_ENV[@]}" "$@" \
    >>"$S/log/$name.log" 2>&1 </dev/null &
  echo $! >"$S/pids/$name"
  EXTRA_ENV=()
}
EXTRA_ENV=()
# nova.cmd.compute has no __main__ guard: call its main as the console script would.
NOVA_COMPUTE='import sys; from nova.cmd.compute import main; sys.argv[0] = "nova-compute"; sys.exit(main())'

# sys CMD...: a short command with the system PATH, output to log/setup.log;
# on failure the command and its output are shown.
sys() {
  local out
  if ! out=$(env -i PATH=$SYS_PATH HOME="$S/home" LANG=C.UTF-8 LC_ALL=C.UTF-8 "$@" 2>&1); then
    echo "$out" >>"$S/log/setup.log"
    fail setup "command failed: $*"$'\n'"$(tail -n 30 <<<"$out")"
  fi
  echo "$out" >>"$S/log/setup.log"
  printf '%s' "$out"
}

alive() { kill -0 "$(cat "$S/pids/$1")" 2>/dev/null; }

# fail NAME MSG: print the service's log tail, stop everything, exit 1.
# Only the first failure speaks: the background migrations fail too once
# everything is stopped, and would bury the cause under their own error.
fail() {
  local name=$1 msg=$2
  if ! mkdir "$S/failed" 2>/dev/null; then
    down
    exit 1
  fi
  {
    echo "real cloud: $name: $msg"
    if [[ -f $S/log/$name.log ]]; then
      echo "---- last lines of $S/log/$name.log ----"
      tail -n 40 "$S/log/$name.log"
    fi
    for f in "$S/log/$name"-app.log "$S/log/$name.log.app"; do
      if [[ -f $f ]]; then
        echo "---- last lines of $f ----"
        tail -n 20 "$f"
      fi
    done
    # A service that died earlier makes a later step fail (a dead MariaDB
    # shows as Keystone not answering the seed): name it too.
    local p dead
    for p in "$S"/pids/*; do
      [[ -e $p ]] || continue
      dead=$(basename "$p")
      if [[ $dead != "$name" ]] && ! kill -0 "$(cat "$p")" 2>/dev/null; then
        echo "real cloud: $dead: exited before this failure"
        if [[ -f $S/log/$dead.log ]]; then
          echo "---- last lines of $S/log/$dead.log ----"
          tail -n 20 "$S/log/$dead.log"
        fi
      fi
    done
  } >&2
  down
  exit 1
}

# wait_tcp NAME PORT [SECONDS]: until something listens on IP:PORT, failing
# as soon as the service's process has exited.
wait_tcp() {
  local name=$1 port=$2 limit=${3:-120} i
  for ((i = 0; i < limit * 4; i++)); do
    if (exec 3<>"/dev/tcp/$IP/$port") 2>/dev/null; then
      return 0
    fi
    alive "$name" || fail "$name" "exited before listening on $IP:$port"
    sleep 0.25
  done
  fail "$name" "not listening on $IP:$port after ${limit}s"
}

# wait_http NAME URL [SECONDS]: until URL answers with any HTTP status.
wait_http() {
  local name=$1 url=$2 limit=${3:-120} i
  for ((i = 0; i < limit * 2; i++)); do
    if curl -s -o /dev/null -m 5 "$url"; then
      return 0
    fi
    alive "$name" || fail "$name" "exited before answering $url"
    sleep 0.5
  done
  fail "$name" "no answer from $url after ${limit}s"
}

down() {
  [[ -d ${S:-}/pids ]] || return 0
  local f pid name
  if [[ -f $S/watchdog.pid ]]; then
    kill -TERM -- "-$(cat "$S/watchdog.pid")" 2>/dev/null || true
    rm -f "$S/watchdog.pid"
  fi
  # The driver agent ignores SIGTERM.
  for f in "$S"/pids/*; do
    [[ -e $f ]] || continue
    name=$(basename "$f")
    pid=$(cat "$f")
    if [[ $name == octavia-driver-agent ]]; then
      kill -KILL -- "-$pid" 2>/dev/null || true
    else
      kill -TERM -- "-$pid" 2>/dev/null || true
    fi
  done
  local i
  for ((i = 0; i < 40; i++)); do
    local left=0
    for f in "$S"/pids/*; do
      [[ -e $f ]] || continue
      if kill -0 "$(cat "$f")" 2>/dev/null; then left=1; else rm -f "$f"; fi
    done
    ((left)) || break
    sleep 0.25
  done
  for f in "$S"/pids/*; do
    [[ -e $f ]] || continue
    kill -KILL -- "-$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
  if mountpoint -q /var/run/octavia 2>/dev/null && [[ -f $S/octavia-run-mounted ]]; then
    umount /var/run/octavia || true
    rm -f "$S/octavia-run-mounted"
  fi
}

# start_watchdog: when REALCLOUD_OWNER_PID (the e2e test binary) exits
# without stopping the cloud (a test timeout panics past every cleanup), the
# cloud stops itself rather than outliving it in the namespace.
start_watchdog() {
  [[ -n ${REALCLOUD_OWNER_PID:-} ]] || return 0
  setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 2; done; exec setsid "$2" down "$3"' \
    watchdog "$REALCLOUD_OWNER_PID" "$HERE/realcloud.sh" "$S" >>"$S/log/watchdog.log" 2>&1 </dev/null &
  echo $! >"$S/watchdog.pid"
}

# --- checks ------------------------------------------------------------------

check_namespace() {
  # The e2e lab (e2e/framework/lab.go) and `make realcloud` set
  # STACKWARD_E2E_LAB in the private network and mount namespaces they enter.
  [[ -n ${STACKWARD_E2E_LAB:-} ]] ||
    die "refusing to start outside the lab's private namespaces (run it from the e2e lab, or use \`make realcloud\`)"
  [[ $(ip -o link show | grep -cv ': lo:') == 0 ]] ||
    die "refusing to start: this network namespace has interfaces other than loopback (not the lab's)"
  [[ $(id -u) == 0 ]] || die "needs root (the lab runs as root)"
}

check_packages() {
  PATH=$SYS_PATH "$HERE/install.sh" --check ||
    die "the real cloud's Debian packages are missing; install them with: sudo hack/realcloud/install.sh"
}

check_ports() {
  local p name port
  [[ $(ip -o addr show dev lo) == *" inet $IP/"* ]] || ip addr add "$IP/32" dev lo
  for p in "${PORTS[@]}"; do
    name=${p%%:*} port=${p##*:}
    if (exec 3<>"/dev/tcp/$IP/$port") 2>/dev/null; then
      die "$IP:$port (for $name) is already in use: is another real cloud running in this namespace? (stop it with: $0 down STATE_DIR)"
    fi
  done
  if (exec 3<>/dev/tcp/127.0.0.1/4369) 2>/dev/null; then
    die "127.0.0.1:4369 (for epmd, RabbitMQ's port mapper) is already in use: is another real cloud running in this namespace?"
  fi
}

# --- configuration -----------------------------------------------------------

render() {
  local src=$1 dst=$2
  sed -e "s|@IP@|$IP|g" -e "s|@STATE@|$S|g" -e "s|@DB_PASS@|$DB_PASS|g" \
    -e "s|@RABBIT_PASS@|$RABBIT_PASS|g" -e "s|@SVC_PASS@|$SVC_PASS|g" -e "s|@REGION@|$REGION|g" \
    -e "s|@OCTAVIA_NETWORK_DRIVER@|${OCTAVIA_NETWORK_DRIVER:-network_noop_driver}|g" \
    "$HERE/templates/$src" >"$dst"
}

configure() {
  mkdir -p "$S"/{etc/placement,log,pids,cmds,home,lock,mysql,rabbitmq/mnesia,ovn,keystone,nova/instances,neutron,glance/{images,staging,tasks},octavia/certs}
  render my.cnf "$S/etc/my.cnf"
  render rabbitmq.conf "$S/etc/rabbitmq.conf"
  render keystone.conf "$S/etc/keystone.conf"
  render uwsgi-keystone.ini "$S/etc/uwsgi-keystone.ini"
  render uwsgi-placement.ini "$S/etc/uwsgi-placement.ini"
  render placement.conf "$S/etc/placement/placement.conf"
  render glance-api.conf "$S/etc/glance-api.conf"
  render nova.conf "$S/etc/nova.conf"
  local h
  for h in "${HOSTS[@]}"; do
    printf '[DEFAULT]\nhost = %s\n' "$h" >"$S/etc/nova-$h.conf"
  done
  render neutron.conf "$S/etc/neutron.conf"
  render ml2_conf.ini "$S/etc/ml2_conf.ini"
  # The API allocates real VIP ports in Neutron for both providers; the
  # amphora worker plugs nothing (noop network driver, no VMs).
  OCTAVIA_NETWORK_DRIVER=allowed_address_pairs_driver render octavia.conf "$S/etc/octavia-api.conf"
  OCTAVIA_NETWORK_DRIVER=network_noop_driver render octavia.conf "$S/etc/octavia.conf"
  echo '[].' >"$S/etc/rabbitmq-plugins"
  if [[ ! -f $S/octavia/ca.pem ]]; then
    # Octavia signs with an encrypted CA key only (an empty passphrase is "given").
    openssl req -x509 -newkey rsa:2048 -passout pass:lab-ca-passphrase -days 30 -subj /CN=realcloud-lab-ca \
      -keyout "$S/octavia/ca.key" -out "$S/octavia/ca.pem" >/dev/null 2>&1
  fi
}

# --- services ----------------------------------------------------------------

start_mariadb() {
  if [[ ! -d $S/mysql/data/mysql ]]; then
    sys mariadb-install-db --defaults-file="$S/etc/my.cnf" --auth-root-authentication-method=normal \
      --skip-test-db >/dev/null
  fi
  start mariadb mariadbd --defaults-file="$S/etc/my.cnf"
  wait_tcp mariadb 3306 60
  local db sql="CREATE USER IF NOT EXISTS 'openstack'@'%' IDENTIFIED BY '$DB_PASS';"
  for db in keystone glance placement nova_api nova nova_cell0 neutron octavia; do
    sql+="CREATE DATABASE IF NOT EXISTS $db; GRANT ALL ON $db.* TO 'openstack'@'%';"
  done
  sys mariadb --defaults-file="$S/etc/my.cnf" --socket="$S/mysql/mysql.sock" -uroot -e "$sql" >/dev/null
}

start_rabbitmq() {
  # Erlang nodes find epmd on the loopback; one started here (not as a
  # daemon) stays in its process group and stops with the rest.
  start epmd epmd -address 127.0.0.1 -port 4369
  local i
  for ((i = 0; i < 40; i++)); do
    (exec 3<>/dev/tcp/127.0.0.1/4369) 2>/dev/null && break
    alive epmd || fail epmd "exited before listening on 127.0.0.1:4369"
    sleep 0.25
  done
  # The library script runs as root (the Debian wrapper would drop to the
  # rabbitmq user); the node name and distribution stay on the lab address.
  EXTRA_ENV=(RABBITMQ_NODENAME=rabbit@localhost RABBITMQ_NODE_IP_ADDRESS="$IP" RABBITMQ_DIST_PORT=25672
    RABBITMQ_CONFIG_FILE="$S/etc/rabbitmq.conf" RABBITMQ_MNESIA_BASE="$S/rabbitmq/mnesia"
    RABBITMQ_LOG_BASE="$S/log" RABBITMQ_ENABLED_PLUGINS_FILE="$S/etc/rabbitmq-plugins"
    RABBITMQ_CONF_ENV_FILE=/dev/null RABBITMQ_PID_FILE="$S/rabbitmq/pid"
    ERL_EPMD_ADDRESS=127.0.0.1 RABBITMQ_SERVER_ERL_ARGS="-kernel inet_dist_use_interface {$(tr . , <<<"$IP")}")
  start rabbitmq /usr/lib/rabbitmq/bin/rabbitmq-server
}

start_ovn() {
  local db
  for db in nb sb; do
    [[ -f $S/ovn/$db.db ]] || sys ovsdb-tool create "$S/ovn/$db.db" "/usr/share/ovn/ovn-$db.ovsschema" >/dev/null
  done
  start ovn-nb ovsdb-server "$S/ovn/nb.db" --remote="ptcp:6641:$IP" --unixctl="$S/ovn/nb.ctl" \
    --pidfile="$S/ovn/nb.pid" --log-file="$S/log/ovn-nb.log.app" -vconsole:off
  start ovn-sb ovsdb-server "$S/ovn/sb.db" --remote="ptcp:6642:$IP" --unixctl="$S/ovn/sb.ctl" \
    --pidfile="$S/ovn/sb.pid" --log-file="$S/log/ovn-sb.log.app" -vconsole:off
  wait_tcp ovn-nb 6641 30
  wait_tcp ovn-sb 6642 30
  start ovn-northd ovn-northd --ovnnb-db="tcp:$IP:6641" --ovnsb-db="tcp:$IP:6642" \
    --unixctl="$S/ovn/northd.ctl" --pidfile="$S/ovn/northd.pid" --log-file="$S/log/ovn-northd.log.app" -vconsole:off
  # Chassis registered by hand (there is no ovn-controller and no datapath):
  # each compute host is a gateway-capable chassis on physnet1.
  local h n=1
  for h in "${HOSTS[@]}"; do
    if ! sbctl --bare --columns=name find Chassis name="$h" | grep -q .; then
      sbctl chassis-add "$h" geneve "127.0.0.$n" -- \
        set Chassis "$h" hostname="$h" \
        external_ids:ovn-bridge-mappings=physnet1:br-ex external_ids:ovn-cms-options=enable-chassis-as-gw \
        other_config:ovn-bridge-mappings=physnet1:br-ex other_config:ovn-cms-options=enable-chassis-as-gw >/dev/null
      sbctl -- --id=@c get Chassis "$h" -- create Chassis_Private name="$h" chassis=@c nb_cfg=0 >/dev/null
    fi
    n=$((n + 1))
  done
  : >"$S/plugged-ports" # the ports of the servers the lab boots (chassis-loop.sh)
  start ovn-chassis bash "$HERE/chassis-loop.sh" "tcp:$IP:6642" "$S/plugged-ports" "${HOSTS[@]}"
}

sbctl() { sys ovn-sbctl --db="tcp:$IP:6642" "$@"; }

start_keystone() {
  if [[ ! -d $S/keystone/fernet-keys ]]; then
    sys keystone-manage --config-file "$S/etc/keystone.conf" fernet_setup --keystone-user root --keystone-group root >/dev/null
    sys keystone-manage --config-file "$S/etc/keystone.conf" credential_setup --keystone-user root --keystone-group root >/dev/null
  fi
  if [[ ! -f $S/keystone/.bootstrapped ]]; then
    sys keystone-manage --config-file "$S/etc/keystone.conf" db_sync >/dev/null
    sys keystone-manage --config-file "$S/etc/keystone.conf" bootstrap --bootstrap-password "$ADMIN_PASS" \
      --bootstrap-admin-url "http://$IP:5000/v3" --bootstrap-public-url "http://$IP:5000/v3" \
      --bootstrap-internal-url "http://$IP:5000/v3" --bootstrap-region-id "$REGION" >/dev/null
    touch "$S/keystone/.bootstrapped"
  fi
  start keystone uwsgi --ini "$S/etc/uwsgi-keystone.ini"
  wait_http keystone "http://$IP:5000/v3" 90
}

# The schemas (every service's migrations, Keystone's bootstrap and the
# identity seed) take most of a cold bring-up's CPU and come out the same
# for the same packages, address and scripts: the first bring-up dumps
# them to a cache, the next ones load the dump instead.
schema_cache() {
  local key
  key=$({
    dpkg-query -W keystone python3-nova python3-neutron python3-octavia python3-glance python3-placement mariadb-server
    echo "$IP $REGION"
    cat "$HERE/realcloud.sh" "$HERE/seed.py" "$HERE"/templates/*
  } | sha256sum | cut -c1-16)
  echo "${REALCLOUD_CACHE:-${HOME:-/root}/.cache/stackward/realcloud}/schemas-$key.sql.gz"
}

restore_schemas() {
  local dump
  dump=$(schema_cache)
  [[ -f $dump && ! -f $S/keystone/.bootstrapped ]] || return 0
  gunzip -c "$dump" | sys mariadb --defaults-file="$S/etc/my.cnf" --socket="$S/mysql/mysql.sock" -uroot >/dev/null
  touch "$S"/{placement,glance,neutron,octavia,nova}.synced "$S/keystone/.bootstrapped"
  log "database schemas loaded from $dump"
}

save_schemas() {
  local dump tmp
  dump=$(schema_cache)
  [[ -f $dump ]] && return 0
  mkdir -p "$(dirname "$dump")"
  # Clouds brought up side by side (e2e packages run in parallel) each
  # write their own file; the rename makes the dump appear whole or not at all.
  tmp=$(mktemp "$dump.XXXXXX")
  if mariadb-dump --defaults-file="$S/etc/my.cnf" --socket="$S/mysql/mysql.sock" -uroot --single-transaction \
    --databases keystone glance placement nova_api nova nova_cell0 neutron octavia 2>>"$S/log/setup.log" |
    gzip >"$tmp"; then
    mv "$tmp" "$dump"
  else
    rm -f "$tmp"
  fi
}

dbsync_all() {
  # The schema migrations are independent; run them side by side.
  local i
  sync_one placement placement-manage --config-dir "$S/etc/placement" db sync
  sync_one glance glance-manage --config-file "$S/etc/glance-api.conf" db_sync
  sync_one neutron neutron-db-manage --config-file "$S/etc/neutron.conf" --config-file "$S/etc/ml2_conf.ini" upgrade heads
  sync_one octavia octavia-db-manage --config-file "$S/etc/octavia.conf" upgrade head
  sync_one nova bash -c "
    set -e
    nova-manage --config-file '$S/etc/nova.conf' api_db sync
    nova-manage --config-file '$S/etc/nova.conf' cell_v2 list_cells | grep -q ' cell0 ' ||
      nova-manage --config-file '$S/etc/nova.conf' cell_v2 map_cell0 --database_connection 'mysql+pymysql://openstack:$DB_PASS@$IP/nova_cell0'
    nova-manage --config-file '$S/etc/nova.conf' cell_v2 list_cells | grep -q ' cell1 ' ||
      nova-manage --config-file '$S/etc/nova.conf' cell_v2 create_cell --name cell1
    nova-manage --config-file '$S/etc/nova.conf' db sync"
  for i in "${!SYNC_PIDS[@]}"; do
    if ! wait "${SYNC_PIDS[$i]}"; then
      fail "${SYNC_NAMES[$i]}-dbsync" "database migration failed"
    fi
  done
}
SYNC_PIDS=()
SYNC_NAMES=()
sync_one() {
  local name=$1
  shift
  [[ -f $S/$name.synced ]] && return 0
  (env -i PATH=$SYS_PATH HOME="$S/home" LANG=C.UTF-8 "$@" >"$S/log/$name-dbsync.log" 2>&1 && touch "$S/$name.synced") &
  SYNC_PIDS+=($!)
  SYNC_NAMES+=("$name")
}

start_services() {
  local etc=$S/etc
  start placement uwsgi --ini "$etc/uwsgi-placement.ini"
  start glance-api glance-api --config-file "$etc/glance-api.conf"
  start neutron-server neutron-server --config-file "$etc/neutron.conf" --config-file "$etc/ml2_conf.ini"
  start nova-api nova-api --config-file "$etc/nova.conf"
  start nova-conductor nova-conductor --config-file "$etc/nova.conf"
  start nova-scheduler nova-scheduler --config-file "$etc/nova.conf"
  local h
  for h in "${HOSTS[@]}"; do
    # The nova-compute package would pull a hypervisor stack; the fake
    # driver needs only the module.
    start "nova-compute-$h" python3 -c "$NOVA_COMPUTE" --config-file "$etc/nova.conf" --config-file "$etc/nova-$h.conf"
  done
  # ovn-octavia-provider's API-side library dials the default socket paths:
  # the driver agent must be up before octavia-api, on a private /var/run/octavia.
  if ! mountpoint -q /var/run/octavia; then
    mkdir -p /var/run/octavia
    mount -t tmpfs realcloud-octavia /var/run/octavia
    touch "$S/octavia-run-mounted"
  fi
  start octavia-driver-agent octavia-driver-agent --config-file "$etc/octavia.conf"
  start octavia-worker octavia-worker --config-file "$etc/octavia.conf"
  start octavia-health-manager octavia-health-manager --config-file "$etc/octavia.conf"
  start octavia-housekeeping octavia-housekeeping --config-file "$etc/octavia.conf"
  local i
  for ((i = 0; i < 120; i++)); do
    [[ -S /var/run/octavia/status.sock && -S /var/run/octavia/get.sock ]] && break
    alive octavia-driver-agent || fail octavia-driver-agent "exited before opening its sockets"
    sleep 0.5
  done
  start octavia-api octavia-api --config-file "$etc/octavia-api.conf"

  wait_http placement "http://$IP:8778/" 120
  wait_http glance-api "http://$IP:9292/" 120
  wait_http neutron-server "http://$IP:9696/" 180
  wait_http nova-api "http://$IP:8774/" 180
  wait_http octavia-api "http://$IP:9876/" 180
  for name in nova-conductor nova-scheduler "${HOSTS[@]/#/nova-compute-}" octavia-worker octavia-health-manager octavia-housekeeping rabbitmq ovn-northd ovn-chassis; do
    alive "$name" || fail "$name" "exited during start"
  done
}

up() {
  rm -rf "$S/failed"
  check_namespace
  check_packages
  [[ -f $S/pids/mariadb ]] && alive mariadb && die "a real cloud already runs from $S (stop it with: $0 down $S)"
  check_ports
  local t0=$SECONDS
  configure
  start_watchdog
  log "starting MariaDB, RabbitMQ, OVN"
  start_mariadb
  start_rabbitmq
  start_ovn
  restore_schemas
  log "starting Keystone; database migrations"
  dbsync_all &
  local dbsync=$!
  start_keystone
  wait_tcp rabbitmq 5672 120
  log "seeding identity"
  seed identity
  wait $dbsync || exit 1
  save_schemas
  log "starting Placement, Glance, Nova, Neutron, Octavia"
  start_services
  log "seeding the lab's cloud"
  seed cloud
  log "up in $((SECONDS - t0)) s: $S/cloud.json"
}

seed() {
  env -i PATH=$SYS_PATH HOME="$S/home" LANG=C.UTF-8 REALCLOUD_IP="$IP" REALCLOUD_REGION="$REGION" \
    REALCLOUD_STATE="$S" REALCLOUD_ADMIN_PASS="$ADMIN_PASS" REALCLOUD_SVC_PASS="$SVC_PASS" \
    REALCLOUD_HOSTS="${HOSTS[*]}" python3 "$HERE/seed.py" "$1" >>"$S/log/seed.log" 2>&1 ||
    fail seed "seeding ($1) failed"
}

# respawn NAME: the fault injection of e2e/framework (realcloud_faults.go)
# stopped, killed or froze NAME's process group; start it again with the
# command and environment `up` recorded. A service still running is an
# error (two would fight over its port or queue).
respawn() {
  local name=$1 CMD=()
  [[ -f $S/cmds/$name ]] || die "respawn: no recorded command for $name in $S/cmds"
  if [[ -f $S/pids/$name ]] && alive "$name"; then
    die "respawn: $name still runs as PID $(cat "$S/pids/$name")"
  fi
  # shellcheck disable=SC1090
  source "$S/cmds/$name"
  start "$name" "${CMD[@]}"
  echo "$(cat "$S/pids/$name")"
}

cmd=${1:-}
S=${2:-}
[[ -n $cmd && -n $S ]] || usage
mkdir -p "$S"
S=$(cd "$S" && pwd)
case $cmd in
  up) up ;;
  down) down ;;
  respawn)
    [[ -n ${3:-} ]] || usage
    respawn "$3"
    ;;
  *) usage ;;
esac

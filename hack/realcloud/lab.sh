#!/usr/bin/env bash
# `make realcloud`: the real cloud in a fresh private network and mount
# namespace of its own, left running for a person to explore.
#
#   lab.sh up [DIR]    bring it up (state and logs in DIR, a new temp dir by default)
#   lab.sh down DIR    stop every process and release the namespace
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SYS_PATH=/usr/sbin:/usr/bin:/sbin:/bin

up() {
  PATH=$SYS_PATH "$HERE/install.sh" --check ||
    { echo "real cloud: install them with: sudo hack/realcloud/install.sh" >&2; exit 1; }
  local dir=${1:-}
  [[ -n $dir ]] || dir=$(mktemp -d /tmp/stackward-realcloud-XXXXXX)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  # A process that only holds the namespaces; the services join them.
  setsid unshare --net --mount --propagation private sleep infinity </dev/null >/dev/null 2>&1 &
  local holder=$!
  echo "$holder" >"$dir/holder.pid"
  sleep 0.2
  if ! nsenter --net="/proc/$holder/ns/net" --mount="/proc/$holder/ns/mnt" \
    env -i PATH=$SYS_PATH HOME="${HOME:-/root}" STACKWARD_E2E_LAB=1 \
    bash -c 'ip link set lo up && exec "$0" up "$1"' "$HERE/realcloud.sh" "$dir"; then
    kill "$holder" 2>/dev/null || true
    exit 1
  fi
  # A wrapper so the CLI runs inside the namespace with the system python.
  cat >"$dir/openstack" <<EOF
#!/bin/sh
# The openstack CLI against the real-cloud lab in $dir (namespace of PID $holder).
exec nsenter --net=/proc/$holder/ns/net env -i PATH=$SYS_PATH HOME=$dir/home \\
  OS_CLIENT_CONFIG_FILE=$dir/clouds.yaml OS_CLOUD=\${OS_CLOUD:-stackward} openstack "\$@"
EOF
  chmod +x "$dir/openstack"
  cat <<EOF

The real cloud is up: Keystone at http://198.18.254.2:5000/v3, region RegionOne,
inside the network namespace held by PID $holder. State, logs and cloud.json: $dir

Use the openstack CLI (as root) inside that namespace, e.g.:
  $dir/openstack server list
  OS_CLOUD=admin $dir/openstack network agent list
or by hand:
  nsenter --net=/proc/$holder/ns/net env -i PATH=$SYS_PATH \\
    OS_CLIENT_CONFIG_FILE=$dir/clouds.yaml OS_CLOUD=stackward openstack loadbalancer list
Clouds in clouds.yaml: admin, stackward (member + load-balancer_member of lab),
stackward-approver (reader), lab-operator, stackward-lab2, other-user.

Stop it (every process, by PID) with:
  make realcloud-down REALCLOUD_DIR=$dir
EOF
}

down() {
  local dir=${1:?usage: lab.sh down DIR}
  [[ -f $dir/holder.pid ]] || { echo "real cloud: no lab in $dir (no holder.pid)" >&2; exit 1; }
  local holder
  holder=$(cat "$dir/holder.pid")
  if kill -0 "$holder" 2>/dev/null; then
    nsenter --net="/proc/$holder/ns/net" --mount="/proc/$holder/ns/mnt" \
      env -i PATH=$SYS_PATH "$HERE/realcloud.sh" down "$dir"
    kill "$holder"
  fi
  rm -rf "$dir"
  echo "real cloud in $dir stopped"
}

case ${1:-} in
  up) up "${2:-}" ;;
  down) down "${2:-}" ;;
  *) echo "usage: $0 up [DIR] | down DIR" >&2; exit 2 ;;
esac

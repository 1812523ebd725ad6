#!/usr/bin/env bash
# Installs the Debian (bookworm, OpenStack Zed) packages the real-cloud lab
# runs, without letting their maintainer scripts start services or configure
# databases: the lab configures and starts everything itself, inside its own
# network namespace. Idempotent; needs root and the Debian package mirror.
# With --check it only reports what is missing (exit status 1).
set -euo pipefail

PACKAGES=(
  mariadb-server rabbitmq-server
  ovn-central ovn-common openvswitch-common
  uwsgi-core uwsgi-plugin-python3
  keystone python3-keystone
  glance python3-glance
  placement-api python3-placement
  python3-nova nova-api nova-conductor nova-scheduler
  neutron-server python3-neutron
  octavia-api octavia-worker octavia-health-manager octavia-housekeeping octavia-driver-agent
  python3-octavia python3-ovn-octavia-provider
  python3-openstackclient python3-octaviaclient
  python3-pymysql curl openssl
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ ${1:-} == --check ]]; then
  echo "real cloud: missing Debian packages: ${missing[*]}" >&2
  exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "real cloud: missing Debian packages: ${missing[*]}" >&2
  echo "install them with: sudo $0" >&2
  exit 1
fi

# Maintainer scripts must not start services (there is no init here, and the
# lab starts its own) nor create databases or Keystone endpoints.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod +x "$policy"
  created_policy=1
fi
trap '[[ $created_policy == 1 ]] && rm -f "$policy"' EXIT

{
  echo "dbconfig-common dbconfig-common/dbconfig-install boolean false"
  for pkg in keystone nova-common placement-common glance-common neutron-common octavia-common; do
    echo "$pkg $pkg/configure_db boolean false"
    echo "$pkg $pkg/register-endpoint boolean false"
  done
  echo "keystone keystone/create-admin-tenant boolean false"
} | debconf-set-selections

export DEBIAN_FRONTEND=noninteractive
start=$(date +%s)
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "real cloud: installed ${#missing[@]} packages in $(( $(date +%s) - start )) s" >&2

#!/usr/bin/env bash
# Stands in for ovn-controller on each lab chassis (there is no datapath):
# reports the chassis alive to Neutron by acknowledging the southbound
# nb_cfg, and binds the logical ports Neutron requests on it, so ML2/OVN
# marks them ACTIVE. Runs until killed.
#   chassis-loop.sh SB_DB HOST...
set -uo pipefail
db=$1
shift
sb() { ovn-sbctl --db="$db" --timeout=10 "$@"; }
while true; do
  cfg=$(sb get SB_Global . nb_cfg 2>/dev/null) || cfg=""
  if [[ -n $cfg ]]; then
    now=$(date +%s%3N)
    args=()
    for h in "$@"; do
      args+=(-- set Chassis_Private "$h" nb_cfg="$cfg" nb_cfg_timestamp="$now")
    done
    sb "${args[@]}" >/dev/null 2>&1 || echo "chassis loop: acknowledging nb_cfg $cfg failed"
  fi
  for h in "$@"; do
    for pb in $(sb --bare --columns=_uuid find Port_Binding "options:requested-chassis=$h" chassis='[]' 2>/dev/null); do
      if sb -- --id=@c get Chassis "$h" -- set Port_Binding "$pb" chassis=@c up=true >/dev/null 2>&1; then
        echo "chassis loop: bound $(sb --bare get Port_Binding "$pb" logical_port 2>/dev/null) to $h"
      fi
    done
  done
  sleep 2
done

#!/usr/bin/env bash
# Stands in for ovn-controller on each lab chassis (there is no datapath):
# reports the chassis alive to Neutron by acknowledging the southbound
# nb_cfg, and binds the logical ports Neutron requests on it, so ML2/OVN
# marks them ACTIVE. Runs until killed.
#   chassis-loop.sh SB_DB PLUGGED_FILE HOST...
# A VIF port (type "") is bound only when its Neutron port ID is a line of
# PLUGGED_FILE: the lab writes there the ports of the servers it boots, as a
# hypervisor plugs a VM's NICs. ovn-controller marks a port up only when an
# interface with its ID appears on br-int, so a port a member forged with a
# server's device_id stays DOWN on a real cloud even after Nova binds it
# (seen here: Nova's info-cache refresh binds such a port to the server's
# host); binding every requested port would make it ACTIVE, which no real
# cloud does. Ports of other types (router ports) are bound as requested.
set -uo pipefail
db=$1
plugged=$2
shift 2
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
      # `get` prints strings quoted ("" for a VIF's empty type).
      type=$(sb --bare get Port_Binding "$pb" type 2>/dev/null | tr -d '"')
      port=$(sb --bare get Port_Binding "$pb" logical_port 2>/dev/null | tr -d '"')
      if [[ -z $type ]] && ! grep -qxF "$port" "$plugged" 2>/dev/null; then
        continue # a VIF no hypervisor plugged: it stays DOWN
      fi
      if sb -- --id=@c get Chassis "$h" -- set Port_Binding "$pb" chassis=@c up=true >/dev/null 2>&1; then
        echo "chassis loop: bound $(sb --bare get Port_Binding "$pb" logical_port 2>/dev/null) to $h"
      fi
    done
  done
  sleep 2
done

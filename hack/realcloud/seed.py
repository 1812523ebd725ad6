"""Seeds the real-cloud lab like stackward-cloudsim's lab seed.

Run by realcloud.sh with the system python3 (openstacksdk comes with
python3-openstackclient), in two phases:
  identity  service users, catalog, projects, users and roles (Keystone only)
  cloud     networks, router, flavors, image, availability zones, quotas,
            an application credential; writes cloud.json and clouds.yaml
Every step finds before it creates, so a restart on the same state directory
converges instead of failing.
"""

import json
import os
import subprocess
import sys
import time

import openstack

IP = os.environ["REALCLOUD_IP"]
REGION = os.environ["REALCLOUD_REGION"]
STATE = os.environ["REALCLOUD_STATE"]
ADMIN_PASS = os.environ["REALCLOUD_ADMIN_PASS"]
SVC_PASS = os.environ["REALCLOUD_SVC_PASS"]
HOSTS = os.environ["REALCLOUD_HOSTS"].split()
AUTH_URL = "http://%s:5000/v3" % IP

SERVICES = [
    ("nova", "compute", "http://%s:8774/v2.1" % IP),
    ("neutron", "network", "http://%s:9696" % IP),
    ("glance", "image", "http://%s:9292" % IP),
    ("placement", "placement", "http://%s:8778" % IP),
    ("octavia", "load-balancer", "http://%s:9876" % IP),
]

# The lab's people, as in e2e/framework.LabSeed plus the tenants the
# ownership tests need. The operator creates the servers the tests stand for.
USERS = [
    ("stackward", "lab-password", "lab", ["member", "load-balancer_member"]),
    ("stackward-approver", "approver-password", "lab", ["reader"]),
    ("lab-operator", "operator-password", "lab", ["member", "load-balancer_member", "admin"]),
    ("stackward-lab2", "lab2-password", "lab2", ["member", "load-balancer_member"]),
    ("other-user", "other-password", "other", ["member", "load-balancer_member"]),
]

FLAVORS = [("m1.small", 1, 2048, 20), ("m1.medium", 2, 4096, 40), ("m1.large", 4, 8192, 80)]


def log(msg):
    print("%s seed: %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def connect(user="admin", password=ADMIN_PASS, project="admin"):
    return openstack.connect(
        auth_url=AUTH_URL, username=user, password=password, project_name=project,
        user_domain_name="Default", project_domain_name="Default", region_name=REGION,
        identity_interface="public")


def retry(what, fn, timeout=180, interval=2):
    deadline = time.time() + timeout
    while True:
        try:
            result = fn()
            if result is not None and result is not False:
                return result
            err = "not yet"
        except Exception as e:  # the service may still be starting
            err = e
        if time.time() > deadline:
            raise SystemExit("seed: %s: gave up after %ds: %s" % (what, timeout, err))
        time.sleep(interval)


def identity(conn):
    idn = conn.identity
    roles = {}
    for name in ["admin", "member", "reader", "load-balancer_member"]:
        roles[name] = idn.find_role(name) or idn.create_role(name=name)
    projects = {}
    for name in ["service", "lab", "lab2", "other"]:
        projects[name] = idn.find_project(name, domain_id="default") or idn.create_project(
            name=name, domain_id="default", description="real-cloud lab")
    for svc, typ, url in SERVICES:
        user = idn.find_user(svc, domain_id="default") or idn.create_user(
            name=svc, password=SVC_PASS, domain_id="default")
        idn.assign_project_role_to_user(projects["service"], user, roles["admin"])
        service = idn.find_service(svc) or idn.create_service(name=svc, type=typ)
        have = {e.interface for e in idn.endpoints(service_id=service.id)}
        for iface in ["public", "internal", "admin"]:
            if iface not in have:
                idn.create_endpoint(service_id=service.id, interface=iface, url=url, region_id=REGION)
    for name, password, project, role_names in USERS:
        user = idn.find_user(name, domain_id="default") or idn.create_user(
            name=name, password=password, domain_id="default", default_project_id=projects[project].id)
        for r in role_names:
            idn.assign_project_role_to_user(projects[project], user, roles[r])
    log("identity seeded")


def find_or(find, create):
    return find() or create()


def cloud(conn):
    idn, net, comp = conn.identity, conn.network, conn.compute
    projects = {p: idn.find_project(p, domain_id="default") for p in ["admin", "lab", "lab2", "other"]}
    lab = projects["lab"]

    # The chassis loop must have reported both chassis alive before Nova
    # can bind a server's port.
    def chassis_alive():
        alive = {a.host for a in net.agents() if a.is_alive}
        return all(h in alive for h in HOSTS)
    retry("OVN chassis alive in Neutron", chassis_alive, timeout=120)

    for p in ["lab", "lab2", "other"]:
        conn.set_compute_quotas(projects[p].id, instances=-1, cores=-1, ram=-1)
        conn.set_network_quotas(projects[p].id, port=-1, floatingip=-1, network=-1, subnet=-1,
                                router=-1, security_group=-1, security_group_rule=-1)

    public = find_or(lambda: net.find_network("public"), lambda: net.create_network(
        name="public", is_router_external=True, provider_network_type="flat",
        provider_physical_network="physnet1", project_id=projects["admin"].id))
    public_sub = find_or(lambda: net.find_subnet("public-v4"), lambda: net.create_subnet(
        name="public-v4", network_id=public.id, ip_version=4, cidr="203.0.113.0/24",
        gateway_ip="203.0.113.1", is_dhcp_enabled=False, project_id=projects["admin"].id))
    labnet = find_or(lambda: net.find_network("lab", project_id=lab.id), lambda: net.create_network(
        name="lab", project_id=lab.id))
    # Addresses Neutron picks by itself (VIPs, router ports) come from the
    # top of the /16, so they never take a node's chosen fixed IP
    # (e2e/framework.NodeIP, the bottom /24s).
    lab_sub = find_or(lambda: net.find_subnet("lab-v4"), lambda: net.create_subnet(
        name="lab-v4", network_id=labnet.id, ip_version=4, cidr="198.18.0.0/16",
        gateway_ip="198.18.0.1", allocation_pools=[{"start": "198.18.200.1", "end": "198.18.253.254"}],
        project_id=lab.id))
    router = net.find_router("lab-router")
    if router is None:
        router = net.create_router(name="lab-router", project_id=lab.id,
                                   external_gateway_info={"network_id": public.id})
        net.add_interface_to_router(router, subnet_id=lab_sub.id)

    flavors = {}
    for name, vcpus, ram, disk in FLAVORS:
        flavors[name] = (comp.find_flavor(name) or comp.create_flavor(
            name=name, vcpus=vcpus, ram=ram, disk=disk, is_public=True)).id

    image = conn.image.find_image("lab-image")
    if image is None:
        path = os.path.join(STATE, "lab-image.raw")
        with open(path, "wb") as f:
            f.write(b"\0" * 1024 * 1024)
        image = conn.create_image("lab-image", filename=path, disk_format="raw",
                                  container_format="bare", visibility="public", wait=True)

    # A compute host takes servers only once it is mapped to its cell; the
    # scheduler's periodic discovery comes too late for the first boot.
    def computes_up():
        up = {s.host for s in comp.services() if s.binary == "nova-compute" and s.state == "up"}
        return all(h in up for h in HOSTS)
    retry("nova-compute services up", computes_up, timeout=180)
    subprocess.run(["nova-manage", "--config-file", os.path.join(STATE, "etc", "nova.conf"),
                    "cell_v2", "discover_hosts"], check=True, stdout=sys.stdout, stderr=sys.stderr)

    # One aggregate (availability zone) per compute host.
    zones = []
    for i, host in enumerate(HOSTS, start=1):
        az = "az-%d" % i
        zones.append(az)
        agg = next((a for a in comp.aggregates() if a.name == "agg-" + az), None)
        if agg is None:
            agg = comp.create_aggregate(name="agg-" + az, availability_zone=az)
        if host not in (agg.hosts or []):
            retry("add %s to %s" % (host, az), lambda: comp.add_host_to_aggregate(agg, host), timeout=120)

    stackward = connect("stackward", "lab-password", "lab")
    user_id = stackward.current_user_id
    for ac in stackward.identity.application_credentials(user=user_id):
        if ac.name == "stackward-lab":
            stackward.identity.delete_application_credential(user_id, ac.id)
    appcred = stackward.identity.create_application_credential(
        user_id, "stackward-lab", secret="lab-appcred-secret",
        description="the CCM's application credential in the real-cloud lab")

    info = {
        "auth_url": AUTH_URL,
        "region": REGION,
        "ip": IP,
        "admin": {"username": "admin", "password": ADMIN_PASS, "project": "admin"},
        "users": {name: {"password": pw, "project": proj, "roles": roles}
                  for name, pw, proj, roles in USERS},
        "projects": {name: p.id for name, p in projects.items()},
        "networks": {
            "lab": {"id": labnet.id, "subnet_id": lab_sub.id, "cidr": "198.18.0.0/16"},
            "public": {"id": public.id, "subnet_id": public_sub.id, "cidr": "203.0.113.0/24"},
        },
        "router": {"name": "lab-router", "id": router.id},
        "image": {"name": "lab-image", "id": image.id},
        "flavors": flavors,
        "availability_zones": zones,
        "compute_hosts": HOSTS,
        "application_credential": {"id": appcred.id, "name": "stackward-lab",
                                   "secret": "lab-appcred-secret", "user": "stackward"},
        "clouds_yaml": os.path.join(STATE, "clouds.yaml"),
        "logs": os.path.join(STATE, "log"),
    }
    write_clouds_yaml(info)
    tmp = os.path.join(STATE, "cloud.json.tmp")
    with open(tmp, "w") as f:
        json.dump(info, f, indent=2)
    os.rename(tmp, os.path.join(STATE, "cloud.json"))
    log("cloud seeded")


def write_clouds_yaml(info):
    entries = [("admin", "admin", ADMIN_PASS, "admin")]
    entries += [(name, name, pw, proj) for name, pw, proj, _ in USERS]
    lines = ["clouds:"]
    for cloud, user, pw, proj in entries:
        lines += [
            "  %s:" % cloud,
            "    region_name: %s" % REGION,
            "    identity_api_version: 3",
            "    auth:",
            "      auth_url: %s" % AUTH_URL,
            "      username: %s" % user,
            "      password: %s" % pw,
            "      project_name: %s" % proj,
            "      user_domain_name: Default",
            "      project_domain_name: Default",
        ]
    with open(os.path.join(STATE, "clouds.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    phase = sys.argv[1]
    conn = connect()
    if phase == "identity":
        retry("Keystone", lambda: conn.identity.get_project(conn.current_project_id), timeout=60)
        identity(conn)
    elif phase == "cloud":
        cloud(conn)
    else:
        raise SystemExit("seed: unknown phase %r" % phase)


if __name__ == "__main__":
    main()

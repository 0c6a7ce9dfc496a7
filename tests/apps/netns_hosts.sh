# Two "hosts" on one machine: network namespaces NS_A and NS_B joined by a veth pair, with
# addresses 10.231.0.1 (A) and 10.231.0.2 (B) inside them, and the link optionally shaped
# with tc tbf. These are the only non-loopback addresses any test uses; they exist only inside
# the two namespaces (the machine's own namespace never sees them). Sourced by
# test_two_hosts.sh and bench/two_hosts.sh:
#   hosts_up [RATE]   creates both (RATE, e.g. 1gbit: each direction capped by tbf); returns
#                     1 with the reason in HOSTS_WHY where namespaces cannot be made here
#   hosts_down        removes both namespaces (the veth pair goes with them); safe to call
#                     twice. Callers run it from their EXIT trap, so it runs on failure too.
HOST_A_ADDR=10.231.0.1
HOST_B_ADDR=10.231.0.2
NS_A="rg2h-$$-a"
NS_B="rg2h-$$-b"
VETH_A="rgva$$"  # interface names are at most 15 characters
VETH_B="rgvb$$"
HOSTS_WHY=
HOSTS_MADE=0

hosts_up() {
  local rate=${1:-}
  if [ "$(id -u)" != 0 ]; then HOSTS_WHY="network namespaces need root (uid $(id -u))"; return 1; fi
  command -v ip >/dev/null || { HOSTS_WHY="no 'ip' command (iproute2)"; return 1; }
  local err
  err=$(ip netns add "$NS_A" 2>&1) || { HOSTS_WHY="ip netns add failed: $err"; return 1; }
  HOSTS_MADE=1
  ip netns add "$NS_B" &&
    ip link add "$VETH_A" type veth peer name "$VETH_B" &&
    ip link set "$VETH_A" netns "$NS_A" && ip link set "$VETH_B" netns "$NS_B" &&
    ip -n "$NS_A" addr add "$HOST_A_ADDR/24" dev "$VETH_A" &&
    ip -n "$NS_B" addr add "$HOST_B_ADDR/24" dev "$VETH_B" &&
    ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up &&
    ip -n "$NS_A" link set "$VETH_A" up && ip -n "$NS_B" link set "$VETH_B" up ||
    { HOSTS_WHY="could not join the namespaces with a veth pair"; return 1; }
  if [ -n "$rate" ]; then
    tc -n "$NS_A" qdisc add dev "$VETH_A" root tbf rate "$rate" burst 512kb latency 50ms &&
      tc -n "$NS_B" qdisc add dev "$VETH_B" root tbf rate "$rate" burst 512kb latency 50ms ||
      { HOSTS_WHY="tc tbf could not shape the link"; return 1; }
  fi
}

hosts_down() {
  [ "$HOSTS_MADE" = 1 ] || return 0
  ip link del "$VETH_A" 2>/dev/null  # only if it never moved into a namespace
  ip netns del "$NS_A" 2>/dev/null
  ip netns del "$NS_B" 2>/dev/null
  HOSTS_MADE=0
}

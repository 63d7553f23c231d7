#!/usr/bin/env bash
# upgrade.sh: roll an upgrade over every upgrade domain with udrain, the way
# a CI job or a cron job would, and act on udrain's exit code.
#
# Usage: upgrade.sh UPGRADE_COMMAND [ROLLOUT FLAG...]
#
#   UPGRADE_COMMAND  runs once per drained domain (sh -c), with UDRAIN_DOMAIN
#                    and UDRAIN_NODES (comma-separated) in its environment,
#                    e.g. './upgrade-nodes.sh 1.37.2'
#   ROLLOUT FLAG     more flags of "udrain rollout", e.g. --ignore-daemonsets
#                    --timeout 30m --recovery-timeout 20m
#
# Environment:
#   UDRAIN          the udrain binary (default: udrain from PATH; kubectl-udrain
#                   works too)
#   UDRAIN_FLAGS    flags for every udrain call, split on spaces: the
#                   connection and the domain label, e.g.
#                   "--context prod --domain-label topology.kubernetes.io/zone"
#   MAX_ATTEMPTS    rollout attempts while a PodDisruptionBudget blocks
#                   (default 6)
#   HEALTHY_WAIT    how long to wait for the groups to be healthy between
#                   attempts (default 10m)
#
# What it does with udrain's exit codes (docs/CLI.md):
#   0    the rollout is complete: exit 0.
#   3    a PodDisruptionBudget blocked a drain past --timeout: wait until the
#        groups are healthy (udrain wait-healthy), then run the same rollout
#        again, which resumes it (same upgrade command, same rollout ID);
#        exit 3 after MAX_ATTEMPTS.
#   4    the placement contract is violated: print the audit, exit 4.
#   130  interrupted: exit 130; run upgrade.sh again to resume.
#   other: exit with it (1 error, 2 usage).
set -euo pipefail

if [[ $# -lt 1 || -z "$1" ]]; then
	echo "usage: upgrade.sh UPGRADE_COMMAND [ROLLOUT FLAG...]" >&2
	exit 2
fi
upgrade_command=$1
shift

udrain=${UDRAIN:-udrain}
read -r -a common <<<"${UDRAIN_FLAGS:-}"
max_attempts=${MAX_ATTEMPTS:-6}
healthy_wait=${HEALTHY_WAIT:-10m}

log() { echo "upgrade.sh: $*" >&2; }

attempt=1
while :; do
	log "rollout attempt $attempt of $max_attempts"
	code=0
	"$udrain" ${common[@]+"${common[@]}"} rollout --upgrade-command "$upgrade_command" "$@" || code=$?
	case $code in
	0)
		log "rollout complete"
		exit 0
		;;
	3)
		if ((attempt >= max_attempts)); then
			log "a PodDisruptionBudget still blocks after $attempt attempts; giving up (run upgrade.sh again later to resume)"
			exit 3
		fi
		log "a PodDisruptionBudget blocks (exit code 3); waiting up to $healthy_wait for the groups to be healthy, then resuming"
		wait_code=0
		"$udrain" ${common[@]+"${common[@]}"} wait-healthy --timeout "$healthy_wait" || wait_code=$?
		case $wait_code in
		0 | 1) ;; # healthy, or not yet: the next attempt waits on the budget again
		*)
			log "wait-healthy failed (exit code $wait_code)"
			exit "$wait_code"
			;;
		esac
		attempt=$((attempt + 1))
		;;
	4)
		log "the placement contract is violated (exit code 4); the audit:"
		"$udrain" ${common[@]+"${common[@]}"} audit >&2 || true
		exit 4
		;;
	130)
		log "interrupted; run upgrade.sh again with the same arguments to resume"
		exit 130
		;;
	*)
		log "rollout failed (exit code $code)"
		exit "$code"
		;;
	esac
done

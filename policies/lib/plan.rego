# METADATA
# title: Plan figures
# description: >-
#   Figures of the plan that several policies judge: one definition, so that the reserve,
#   the warm-up floor and the disruption budget speak of the same zone.
package capgate.lib.plan

# METADATA
# title: largest_zone_replicas
# description: >-
#   The replicas of the plan's largest zone (what the loss of one zone takes); 0 for a
#   plan that places none.
largest_zone_replicas := max([n | some n in input.plan.replicas_per_zone]) if {
	count(input.plan.replicas_per_zone) > 0
} else := 0

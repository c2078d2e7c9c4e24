# METADATA
# title: Queue deadlines and shedding configured
# description: >-
#   Every workload class has an admission entry in the plan with a queue deadline no
#   longer than the class's queue-deadline SLO, a bounded queue (max_queue_depth a
#   number >= 0) and load shedding when the queue is full.
# custom:
#   id: admission_configured
#   severity: high
#   guards: "checklist: queue deadlines and load shedding are configured; method: use admission and backpressure while replicas warm"
package capgate.policies.admission_configured

import data.capgate.lib.result

_policy := "admission_configured"

_admission_classes := input.plan.admission.classes

# Helpers instead of `not f(x.y)`: with x.y undefined, OPA leaves that negation undefined.
_admitted(name) if is_object(_admission_classes[name])

# METADATA
# title: Class admitted explicitly
# description: plan.admission.classes has an entry for every workload class.
# custom:
#   severity: high
#   guards: "checklist: queue deadlines and load shedding are configured"
violations contains v if {
	some name, _ in input.workload.classes
	not _admitted(name)
	v := result.violation(
		_policy, "class_admission_missing", "high",
		concat("", ["class ", name, " has no admission settings (queue deadline, queue bound, shedding): add admission.classes.", name]),
		{"class": name},
	)
}

# METADATA
# title: Queue deadline set
# description: plan.admission.classes[c].queue_deadline_ms is a number.
# custom:
#   severity: high
#   guards: "checklist: queue deadlines are configured"
violations contains v if {
	some name, class in input.workload.classes
	admission := _admission_classes[name]
	is_object(admission)
	not is_number(object.get(admission, "queue_deadline_ms", null))
	v := result.violation(
		_policy, "queue_deadline_missing", "high",
		concat("", ["class ", name, " has no queue deadline: set admission.classes.", name, ".queue_deadline_ms (its SLO allows ", result.show(object.get(class.slo, "queue_deadline_ms", null)), " ms in queue)"]),
		{"class": name, "queue_deadline_ms": object.get(admission, "queue_deadline_ms", null), "slo_queue_deadline_ms": object.get(class.slo, "queue_deadline_ms", null)},
	)
}

# METADATA
# title: Queue deadline within SLO
# description: The admission queue deadline is no longer than the class's queue_deadline_ms SLO.
# custom:
#   severity: high
#   guards: "checklist: queue deadlines are configured"
violations contains v if {
	some name, class in input.workload.classes
	deadline := _admission_classes[name].queue_deadline_ms
	is_number(deadline)
	deadline > class.slo.queue_deadline_ms
	v := result.violation(
		_policy, "queue_deadline_exceeds_slo", "high",
		concat("", ["class ", name, ": admission.classes.", name, ".queue_deadline_ms ", result.show(deadline), " ms is longer than the SLO's ", result.show(class.slo.queue_deadline_ms), " ms"]),
		{"class": name, "queue_deadline_ms": deadline, "slo_queue_deadline_ms": class.slo.queue_deadline_ms},
	)
}

# METADATA
# title: Queue bounded
# description: plan.admission.classes[c].max_queue_depth is a number >= 0.
# custom:
#   severity: high
#   guards: "checklist: load shedding is configured; failure mode: retry storms amplify overload"
violations contains v if {
	some name, _ in input.workload.classes
	admission := _admission_classes[name]
	is_object(admission)
	not _bounded(object.get(admission, "max_queue_depth", null))
	v := result.violation(
		_policy, "queue_unbounded", "high",
		concat("", ["class ", name, ": the queue has no bound; set admission.classes.", name, ".max_queue_depth"]),
		{"class": name, "max_queue_depth": object.get(admission, "max_queue_depth", null)},
	)
}

_bounded(depth) if {
	is_number(depth)
	depth >= 0
}

# METADATA
# title: Shedding on a full queue
# description: plan.admission.classes[c].shed_when_full is true.
# custom:
#   severity: high
#   guards: "checklist: load shedding is configured"
violations contains v if {
	some name, _ in input.workload.classes
	admission := _admission_classes[name]
	is_object(admission)
	object.get(admission, "shed_when_full", null) != true
	v := result.violation(
		_policy, "shedding_disabled", "high",
		concat("", ["class ", name, ": requests are not shed when the queue is full; set admission.classes.", name, ".shed_when_full: true"]),
		{"class": name, "shed_when_full": object.get(admission, "shed_when_full", null)},
	)
}

# METADATA
# title: Autoscaling sees the queue
# description: >-
#   Autoscaling on a metric in autoscaling_blind_metrics (CPU or memory utilisation) does
#   not see queueing or KV-cache pressure on a GPU server: scale on the queue or the KV
#   cache instead.
# custom:
#   severity: high
#   guards: "method: use admission and backpressure while replicas warm"
violations contains v if {
	metric := input.plan.autoscaling.metric
	metric in data.capgate.thresholds.autoscaling_blind_metrics
	v := result.violation(
		_policy, "autoscaling_blind_metric", "high",
		concat("", ["autoscaling.metric ", metric, " does not see queueing or KV-cache pressure; scale on vllm:num_requests_waiting or vllm:kv_cache_usage_perc"]),
		{"metric": metric},
	)
}

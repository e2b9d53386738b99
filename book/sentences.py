"""Sentences a chapter pastes whose wording depends on what the build machine measured.

A chapter that says "the triad reads *lower*" or "the sweep *bends later than the model*"
picks one of a few sentences at run time. Every one of them is written here, once, so the
Korean and Chinese editions can translate all of them (``tools/editions.py update-po``
puts each in ``locales/<lang>/LC_MESSAGES/pasted.po``), not only the ones this machine chose.

Example
-------
>>> say("acc_below", ratio=14.2)
'14 times below'
>>> "{0} times below" in templates()
True
"""

from __future__ import annotations

import string

MEASURE: dict[str, str] = {
    "fp64_low": (
        "That is well under the 0.5 the register width suggests: float64 lost more than its lanes, "
        "to the BLAS kernel or to other work on the machine."
    ),
    "fp64_close": "That is close to the 0.5 the register width suggests.",
    "fp64_high": (
        "That is well over the 0.5 the register width suggests: at these small sizes neither run is "
        "limited by the vector units alone, so the ratio says more about fixed costs and the machine's "
        "load than about the hardware."
    ),
    "triad_lower": "lower",
    "triad_higher": "higher",
    "acc_below": "{ratio:.0f} times below",
    "acc_same": "about the same as",
    "acc_above": "{ratio:.0f} times above",
    "llc_unknown": "This machine does not report the size of its last-level cache, so whether the copy's {mib:.0f} MiB fit in it is unknown.",
    "llc_larger": (
        "The copy's two arrays take {mib:.0f} MiB, more than the {llc:.0f} MiB last-level cache this machine reports, "
        "so most of what it moves comes from main memory."
    ),
    "llc_fits": (
        "The copy's two arrays take {mib:.0f} MiB, and this machine reports a last-level cache of {llc:.0f} MiB: "
        "part of what the copy moves may come from the cache, so the bandwidth roof may sit above main memory's. "
        "(A virtual machine often reports the whole cache of a processor it shares with others.)"
    ),
    "cpu_little": "a CPU has little compute per byte of memory bandwidth",
    "cpu_much": "this machine has unusually much compute per byte of memory bandwidth",
    "dot_left": (
        "so it sits left of the measured ridge: on the sloped part of the roof, or above it when its "
        "vectors fit in the cache (see below)"
    ),
    "dot_right": "yet here it sits right of the measured ridge: this machine's ridge is below a quarter FLOP per byte",
    "dot_above_all": (
        "On the build machine every dot product of the sweep runs above the bandwidth roof, up to the longest, "
        "{mib:.0f} MiB of vectors: none is long enough to come from main memory alone."
    ),
    "dot_above_some": (
        "On the build machine {n} of the {total} dot products run above the bandwidth roof; the longest, "
        "{mib:.0f} MiB of vectors, does not."
    ),
    "dot_above_longest": (
        "On the build machine {n} of the {total} dot products run above the bandwidth roof, the longest, "
        "{mib:.0f} MiB of vectors, among them."
    ),
    "dot_above_none": "On the build machine no dot product runs above the bandwidth roof.",
    "sweep_range": "{first} to {last}",
    "knee_few": "has too few sizes to place a knee",
    "knee_first_below": (
        "already reaches 80% of its plateau at its smallest size, B = {first}, so its knee is at or below "
        "that, at or below the prediction"
    ),
    "knee_first_above": (
        "already reaches 80% of its plateau at its smallest size, B = {first}, so its knee is at or below "
        "that, above the prediction"
    ),
    "knee_at": "reaches 80% of its plateau at B ≈ {b:.1f}, {ratio:.1f} times the prediction",
    "model_knee_ratio": (
        "That ratio would not be 1 even for a perfect fit: read the same way, the model's own curve at these "
        "sizes reaches 80% of the roof at B ≈ {b:.1f}, {ratio:.2f} times B*, because it climbs straight to the "
        "roof and passes 80% of it before the corner."
    ),
    "model_knee": (
        "Read the same way, the model's own curve at these sizes reaches 80% of the roof at B ≈ {b:.1f}, "
        "{ratio:.2f} times B*."
    ),
    "reason_few": "With so few sizes the comparison says little.",
    "reason_early": (
        "The sweep bends earlier than the model: it levels off at only {plateau:.0%} of the measured peak, "
        "and 80% of a lower plateau is reached at a lower intensity."
    ),
    "reason_late_slow": (
        "The sweep bends later than the model: at {count} of the sizes below the knee it runs under 80% of "
        "its roof, for the reasons below."
    ),
    "reason_late": "The sweep bends later than the model.",
    "reason_good": "Here the model places the bend well.",
    "above_some": (
        "One point sits above the roof: at B = {b} the sweep runs {ratio:.1f} times faster than the roofline "
        "allows. Its weight matrix, {mib:.0f} MiB, is read again by every timed run, and the processor's "
        "caches keep much of it from one run to the next, so it reaches the cores faster than the measured "
        "main-memory bandwidth. The roof only bounds points whose bytes come from main memory."
    ),
    "above_many": (
        "{n} points sit above the roof; the farthest, at B = {b}, runs {ratio:.1f} times faster than the "
        "roofline allows. The weight matrix, {mib:.0f} MiB, is read again by every timed run, and the processor's "
        "caches keep much of it from one run to the next, so at small B it reaches the cores faster than the "
        "measured main-memory bandwidth. The roof only bounds points whose bytes come from main memory."
    ),
    "above_none": "No point of the sweep sits above the roofline.",
    # the memory hierarchy: caches, the staircase's levels, and the points placed on them
    "caches_none": "This machine does not report its caches.",
    "caches_one": "This machine reports only an L1 cache, of {l1} KiB per core.",
    "caches_two": "This machine reports an L1 of {l1} KiB and an L2 of {l2} KiB per core.",
    "caches_three": (
        "This machine reports an L1 of {l1} KiB and an L2 of {l2} KiB per core, and a last-level cache (L{last}) "
        "of {llc:g} MiB."
    ),
    "levels_none": (
        "Without the caches' sizes the sweep cannot be split into levels, so the hierarchical roofline below "
        "falls back to the copy's bandwidth alone."
    ),
    "levels_steps": (
        "One core moves {first:.0f} GB/s while its working set fits in L{level}, and {dram:.0f} GB/s from main "
        "memory: {ratio:.1f} times less. (Main memory's step is {copy:.2f} times the copy bandwidth measured "
        "above: a different loop over different sizes.)"
    ),
    "levels_no_dram": (
        "One core moves {first:.0f} GB/s while its working set fits in L{level}; no working set of the sweep "
        "was far enough past the last-level cache to measure main memory alone."
    ),
    "levels_down": "Each level is slower than the one above it.",
    "levels_flat": (
        "From L{a} to L{b} the bandwidth drops by only {pct:.0f}%: there the limit is numpy's loop on one "
        "core, or L{b} is nearly as fast as L{a}."
    ),
    "levels_rise": (
        "L{b} measures as fast as L{a} or faster ({fast:.0f} against {slow:.0f} GB/s): there the limit is "
        "numpy's loop on one core, not the cache."
    ),
    # the in-core peak: where each figure came from, and the prediction against the measurement
    "not_reported": "not reported",
    "cores_topology": "sysfs topology: the physical cores this process may use",
    "cores_cpu_count": "the logical CPUs this process may use, each assumed to be a core",
    "clock_cpufreq": "sysfs cpufreq: the highest clock the kernel may set",
    "clock_cpuinfo": "cpu MHz in /proc/cpuinfo: the clock when it was read (under a hypervisor, usually the nominal one)",
    "clock_none": "nothing: Linux does not report it here",
    "simd_bits": "{bits} bits, {lanes} float32 lanes",
    "simd_avx512f": "flag avx512f in /proc/cpuinfo",
    "simd_avx": "flag avx in /proc/cpuinfo",
    "simd_sse2": "flag sse2 in /proc/cpuinfo",
    "simd_asimd": "flag asimd in /proc/cpuinfo (Arm NEON)",
    "simd_none": "no SIMD flag in /proc/cpuinfo that this page knows",
    "fma_yes": "yes: one instruction for a × b + c, two FLOPs",
    "fma_no": "no: a multiply and an add, one FLOP each",
    "fma_fma": "flag fma in /proc/cpuinfo",
    "fma_fma4": "flag fma4 in /proc/cpuinfo",
    "fma_asimd": "flag asimd in /proc/cpuinfo (Arm NEON has FMA)",
    "fma_none": "no FMA flag in /proc/cpuinfo",
    "fma_per_cycle_assumed": (
        "assumed: Linux does not report it; two is right for most x86 cores since 2013 (Intel Haswell, AMD Zen)"
    ),
    "pred_value": (
        "With these figures the float32 prediction is {cores} × {ghz:.2f} GHz × {lanes} × {fma} × {flops} = "
        "{pred:.1f} GFLOP/s."
    ),
    "pred_no_cores": "This machine does not report its cores, so there is no prediction to test.",
    "pred_no_clock": "This machine does not report its clock, so there is no prediction to test.",
    "pred_no_simd": "This machine reports no SIMD width this page knows, so there is no prediction to test.",
    "pred_above": (
        "The measured peak, {measured:.1f} GFLOP/s, is {pct:.0f}% of the prediction: faster than these figures "
        "allow, so one of them is too low. The cores ran above the clock read (a turbo clock), or they start "
        "more FMAs per cycle than assumed."
    ),
    "pred_close": (
        "The measured peak, {measured:.1f} GFLOP/s, is {pct:.0f}% of the prediction: BLAS keeps the vector "
        "units nearly full."
    ),
    "pred_gap": (
        "The measured peak, {measured:.1f} GFLOP/s, is {pct:.0f}% of the prediction. The gap has several "
        "candidates: the clock drops under heavy vector work; some cores run 512-bit instructions at half "
        "rate (AMD's Zen 4 splits each in two) or have one FMA unit, not two; the build's matmuls are small; "
        "other work shares the machine."
    ),
    "pred_far": (
        "The measured peak, {measured:.1f} GFLOP/s, is only {pct:.0f}% of the prediction, too far below it for "
        "a lower clock alone: one of the figures does not hold for this machine (half-rate 512-bit "
        "instructions, one FMA unit), BLAS does not use every core, or other work shares the machine."
    ),
    "scalar": (
        "The scalar ceiling, one lane per FMA, is {scalar:.1f} GFLOP/s, {ratio:.0f} times below the measured "
        "peak: the best that code the compiler does not vectorise can do."
    ),
    "scalar_above": (
        "The scalar ceiling, one lane per FMA, is {scalar:.1f} GFLOP/s, above the measured peak: on this "
        "machine the matmuls did not even reach it."
    ),
    "place_unknown": "Without the caches' sizes the points cannot be placed on levels.",
    "place_none": "No point runs above the main-memory roof, so none needs a higher ceiling.",
    "place_all_under": (
        "Each of the {n} points above the main-memory roof sits under the ceiling of the fastest level that "
        "can hold its working set: the hierarchy explains them."
    ),
    "place_one_under": (
        "The point above the main-memory roof sits under the ceiling of the fastest level that can hold its "
        "working set: the hierarchy explains it."
    ),
    "place_some_over": (
        "Of the {n} points above the main-memory roof, {under} sit under the ceiling of the level they fit "
        "in, and {over} above it, by up to {ratio:.1f} times."
    ),
    "place_partial": (
        "Of the {n} points above the main-memory roof, {under} sit under the ceiling of the level they fit in "
        "and {over} above it."
    ),
    "place_all_over": (
        "All {n} points above the main-memory roof run above the ceiling of the level they fit in too, by up "
        "to {ratio:.1f} times."
    ),
    "place_one_over": (
        "The point above the main-memory roof runs above the ceiling of the level it fits in too, {ratio:.1f} times."
    ),
    "over_reason": (
        "Those ceilings are one core's, from a loop that reads two arrays and writes one. BLAS ran {threads} "
        "threads here, each core with its own L1 and L2, and a dot product only reads, which a core does "
        "faster than it writes."
    ),
    "over_reason_one": (
        "Those ceilings come from a loop that reads two arrays and writes one; BLAS's kernels may move data "
        "faster than that loop, and a dot product only reads, which a core does faster than it writes."
    ),
    "over_peak": (
        "Their ceiling is the measured peak itself, and they beat it: the peak is the best median of the "
        "matmuls timed above, and on a machine shared with other work a later run can do better."
    ),
    "over_peak_one": (
        "Its ceiling is the measured peak itself, and it beats it: the peak is the best median of the matmuls "
        "timed above, and on a machine shared with other work a later run can do better."
    ),
    "over_peak_some": (
        "{n} of those have the measured peak itself as their ceiling, and beat it: the peak is the best median "
        "of the matmuls timed above, and on a machine shared with other work a later run can do better."
    ),
    "place_unmeasured": "{n} of them fit in a level whose bandwidth the sweep did not measure, so they are not judged.",
    "h200_same": "the same peak",
    "h200_different": "a different peak",
}
# Added to any knee sentence when the predicted knee lies outside the sizes measured.
OUTSIDE = "; the prediction lies outside the sizes measured, so compare the two with care"


def say(key: str, **values: float) -> str:
    """The sentence ``key`` of :data:`MEASURE` with its numbers filled in."""
    return MEASURE[key].format(**values)


def templates() -> list[str]:
    """Every sentence as the editions' catalog keys it: each number replaced by ``{0}``, ``{1}``, …"""
    from localfigures import template

    found = []
    for key, text in MEASURE.items():
        fields = {name: 7 for _, name, _, _ in string.Formatter().parse(text) if name}
        sentence = text.format(**fields)
        found.append(template(sentence)[0])
        if key.startswith("knee_"):
            found.append(template(sentence + OUTSIDE)[0])
    return found

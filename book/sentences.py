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

import dataclasses
import math
import string
from typing import TYPE_CHECKING

from rooflinelib.measure import MEDIAN_SPREAD

if TYPE_CHECKING:
    from rooflinelib.measure import CpuFigures, MachineMeasurement

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
    "threads_many": (
        "numpy runs the copy and the triad on one core, while BLAS ran each matmul on {threads} threads: the "
        "bandwidth roof is one core's, and all the cores together may draw more from main memory."
    ),
    "threads_one": (
        "numpy runs the copy and the triad on one core, and BLAS ran the matmuls on one thread here too, so "
        "both roofs are one core's."
    ),
    "threads_unknown": (
        "numpy runs the copy and the triad on one core; how many threads BLAS ran the matmuls on is not "
        "reported, so the peak may be more than one core's."
    ),
    "cpu_little": "a CPU has little compute per byte of memory bandwidth",
    "cpu_much": "this machine has unusually much compute per byte of memory bandwidth",
    "dot_left": (
        "so it sits left of the measured ridge: on the sloped part of the roof, or above it when its "
        "vectors fit in the cache (see below)"
    ),
    "dot_right": "yet here it sits right of the measured ridge: this machine's ridge is below a quarter FLOP per byte",
    "dot_above_all": (
        "In this run every dot product of the sweep runs above the bandwidth roof, up to the longest, "
        "{mib:.0f} MiB of vectors: none is long enough to come from main memory alone."
    ),
    "dot_above_all_read": (
        "In this run every dot product runs above the bandwidth roof. The shorter ones fit in a cache; the "
        "longest, {mib:.0f} MiB of vectors, {llc:.0f} times the last-level cache, does not, and still runs "
        "{ratio:.2f} times faster than the roof allows. A dot product only reads, while the copy that set the "
        "roof is credited with two arrays and moves up to three (write-allocate, above): the roof sits below what "
        "main memory delivers to a loop that only reads."
    ),
    "dot_above_some": (
        "In this run {n} of the {total} dot products run above the bandwidth roof; the longest, "
        "{mib:.0f} MiB of vectors, does not."
    ),
    "dot_above_longest": (
        "In this run {n} of the {total} dot products run above the bandwidth roof, the longest, "
        "{mib:.0f} MiB of vectors, among them."
    ),
    "dot_above_none": "In this run no dot product runs above the bandwidth roof.",
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
    "unsteady_dip": (
        "does not rise steadily: at B = {b} it runs at only {pct:.0f}% of its rate at B = {ref}, a smaller size, "
        "and its timed runs spread from {fast:.2f} to {slow:.2f} ms. Other work on the build machine slowed some "
        "of them, so this run is too noisy to place a knee or a plateau"
    ),
    "unsteady_drop": (
        "does not level off: at B = {b} it runs at only {pct:.0f}% of its best rate, reached at B = {ref}, "
        "and its timed runs spread from {fast:.2f} to {slow:.2f} ms. Other work on the build machine slowed some "
        "of them, so this run is too noisy to place a knee or a plateau"
    ),
    "steady_dip": (
        "does not rise steadily: at B = {b} it runs at only {pct:.0f}% of its rate at B = {ref}, a smaller size. "
        "Its median timed run is within {spread:.0f}% of its fastest, so no single slowed run explains it: something costs "
        "extra at that size every time (BLAS changing its kernel or its blocking, or other work that ran "
        "throughout), and a knee or a plateau cannot be placed on a curve that does not rise to one"
    ),
    "steady_drop": (
        "does not level off: at B = {b} it runs at only {pct:.0f}% of its best rate, reached at B = {ref}. "
        "Its median timed run is within {spread:.0f}% of its fastest, so no single slowed run explains it: something costs "
        "extra at that size every time (BLAS changing its kernel or its blocking, or other work that ran "
        "throughout), and a knee or a plateau cannot be placed on a curve that does not rise to one"
    ),
    "reason_unsteady": (
        "To see where the curve bends, measure again on an idle machine (python -m rooflinelib measure)."
    ),
    "reason_steady_dip": (
        "A second run (python -m rooflinelib measure) tells the two apart: a cost of BLAS comes back at the "
        "same size, other work does not."
    ),
    "left_cache_one": (
        "The point at B = {b} is left out of the knee test: it ran {ratio:.1f} times faster than the main-memory "
        "roof allows, so a cache fed part of its bytes (see below), and the knee is about main memory."
    ),
    "left_cache_many": (
        "The {n} points that ran above the main-memory roof, between B = {first} and B = {last} and up to "
        "{ratio:.1f} times faster than it allows, are left out of the knee test: a cache fed part of their bytes "
        "(see below), and the knee is about main memory."
    ),
    "left_matvec": (
        "The point at B = 1 is left out too: its FLOPs/s were {ratio:.1f} times those of B = 2. At B = 1 BLAS runs "
        "its matrix–vector routine; from B = 2 on it runs the matrix–matrix one, which first copies the "
        "weights into the layout its kernel reads (packing, see below)."
    ),
    "left_matvec_only": (
        "The point at B = 1 is left out of the knee test: its FLOPs/s were {ratio:.1f} times those of B = 2. At B = 1 "
        "BLAS runs its matrix–vector routine; from B = 2 on it runs the matrix–matrix one, which first copies "
        "the weights into the layout its kernel reads (packing, see below)."
    ),
    "reason_late_fixed": (
        "The sweep bends later than the model: at {count} of the sizes below the knee it runs under 80% of "
        "its roof, each at most {us:.0f} µs slower than its roofline time, the size of a call's fixed costs "
        "(see below)."
    ),
    "reason_late_gap": (
        "The sweep bends later than the model: at {count} of the sizes below the knee it runs under 80% of "
        "its roof, up to {ms:.1f} ms slower than its roofline time. That is too long for a call's fixed costs, "
        "which take microseconds: work that grows with the weight matrix, such as packing it, took that time "
        "(see below)."
    ),
    "caption_steady": "As B grows, the matmul points climb towards the flat roof.",
    "caption_unsteady": (
        "In this run the matmul points do not climb steadily towards the flat roof, so no knee or plateau is "
        "read from them (see below)."
    ),
    "caption_left_out": (
        "As B grows, the matmul points climb towards the flat roof; the points the knee test leaves out are "
        "named below."
    ),
    "caption_few": "The sweep has too few sizes to show how the points climb.",
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
        "above: a different loop over different sizes, on one core too.)"
    ),
    "levels_steps_alloc": (
        "One core moves {first:.0f} GB/s while its working set fits in L{level}, and {dram:.0f} GB/s from main "
        "memory: {ratio:.1f} times less. (Main memory's step is {copy:.2f} times the copy bandwidth measured "
        "above, near the 1.5 that write-allocate would give: the copy is credited with two arrays and "
        "moves up to three, while acc += x writes only lines it has just read, so it moves what it is credited with.)"
    ),
    "alloc_upper": (
        "At the upper counts the copy would draw {copy:.1f} GB/s and the triad {triad:.1f} GB/s from main memory."
    ),
    "alloc_both": (
        "Both exceed the {dram:.1f} GB/s one core draws from main memory below, so here some of those reads "
        "are likely skipped."
    ),
    "alloc_one": (
        "One of them exceeds the {dram:.1f} GB/s one core draws from main memory below, so here some of those "
        "reads are likely skipped."
    ),
    "alloc_none": (
        "Both are within the {dram:.1f} GB/s one core draws from main memory below; which count holds, only the "
        "processor's traffic counters could tell."
    ),
    "alloc_unknown": "Which count holds, only the processor's traffic counters could tell.",
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
    "clock_cpuinfo": (
        "cpu MHz in /proc/cpuinfo: under a hypervisor, the nominal clock; a core under load may run well above it"
    ),
    "clock_none": "nothing: Linux does not report it here",
    "simd_bits": "{bits} bits, {lanes} float32 lanes",
    "simd_avx512f": "flag avx512f in /proc/cpuinfo",
    "simd_avx": "flag avx in /proc/cpuinfo",
    "sweep_in_llc": (
        "Every size of this sweep keeps {lo:.0f} to {hi:.0f} MiB in play, less than the {llc:.0f} MiB "
        "last-level cache, so its weights stay in that cache between runs."
    ),
    "sweep_in_llc_knee": (
        "Yet the knee is judged against the main-memory roof. Fed from main memory, the small sizes could only "
        "run slower, so this knee is a lower bound."
    ),
    "sweep_in_llc_test": (
        "To test B* against main memory itself, the weights must outgrow the cache: D = {d} or more in float32."
    ),
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
        "assumed: Linux does not report it. Two 256-bit FMAs per cycle is right for Intel cores since Haswell and "
        "AMD cores since Zen 2; two 512-bit ones for Xeon Scalable cores since Ice Lake, Skylake and Cascade Lake "
        "Xeon Gold 6000 and Platinum cores, and desktop and server Zen 5; one elsewhere (Zen 4 splits each 512-bit "
        "FMA in two; other Skylake and Cascade Lake Xeons and laptop Zen 5 have one 512-bit unit), which halves the "
        "prediction"
    ),
    "fma_zen5": (
        "Two 512-bit FMAs fit this machine: its AMD cores report {l1:.0f} KiB of L1 data cache each, as Zen 5 "
        "has and Zen 4 (32 KiB) does not."
    ),
    "fma_zen4": (
        "With Zen 4's halved 512-bit rate the prediction would be {half:.1f} GFLOP/s, below the measured peak "
        "of {measured:.1f} GFLOP/s."
    ),
    "pred_value": (
        "With these figures the float32 prediction is {cores} × {ghz:.3f} GHz × {lanes} × {fma} × {flops} = "
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
        "units busy for most of the cycles these figures count."
    ),
    "pred_nominal": (
        "The measured peak, {measured:.1f} GFLOP/s, is {pct:.0f}% of the prediction. The clock in the prediction "
        "is the nominal one, and the clock under load differs from it both ways (see the box below), so that "
        "share does not say how full BLAS keeps the vector units: only a loop timed on the core itself (a "
        "microbenchmark of FMAs, or the cycles a profiler such as perf stat counts) settles it."
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
    "place_threads": (
        "The ceilings are one core's, from the staircase, but the matmuls ran on {threads} BLAS threads: in a "
        "cache each core has its own (L1, L2), {threads} threads can draw up to {threads} times a ceiling's "
        "bandwidth, and in a shared cache or main memory more than one core does."
    ),
    "place_threads_one": (
        "The ceilings are one core's, from the staircase, and BLAS ran the matmuls on one thread here: each "
        "point is judged on one core's footing."
    ),
    "place_threads_unknown": (
        "The ceilings are one core's, from the staircase; how many threads BLAS ran the matmuls on is not "
        "reported, so a matmul point may draw more than its ceiling's bandwidth."
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
        "Their ceiling is the measured peak itself, and they beat it: the peak is the best rate of the "
        "matmuls timed above, and on a machine shared with other work a later run can do better."
    ),
    "over_peak_one": (
        "Its ceiling is the measured peak itself, and it beats it: the peak is the best rate of the matmuls "
        "timed above, and on a machine shared with other work a later run can do better."
    ),
    "over_peak_some": (
        "{n} of those have the measured peak itself as their ceiling, and beat it: the peak is the best rate "
        "of the matmuls timed above, and on a machine shared with other work a later run can do better."
    ),
    "place_unmeasured": "{n} of them fit in a level whose bandwidth the sweep did not measure, so they are not judged.",
    # what noise looks like: the contended run against the reference, and the live run's verdict
    "noise_peak": (
        "Its fastest matmul's slowest run took {slow:.0f} times as long as its fastest run, and its median "
        "{median:.0f} times; in the reference run, {ref_slow:.2f} and {ref_median:.2f} times."
    ),
    "noise_drop": "Its sweep falls at B = {b} to {pct:.0f}% of its rate at B = {ref}, a smaller size.",
    "noise_dip": "Its sweep dips at B = {b} to {pct:.0f}% of its rate at B = {ref}, a smaller size.",
    "noise_sweep_none": "Its sweep still rises to a plateau.",
    "noise_none": "no sign of noise",
    "noise_signs": "{n} signs",
    "live_ok": (
        "This live run passes the noise check. Its peak is {peak:.1f} GFLOP/s and its copy {copy:.1f} GB/s, "
        "{pct_peak:.0f}% and {pct_copy:.0f}% of the reference run's."
    ),
    "live_noisy_spread": (
        "This live run looks noisy: the noise check finds {n} signs of noise, among them a roof whose slowest "
        "run took {ratio:.1f} times as long as its fastest. Read its numbers with the box above in mind."
    ),
    "live_noisy_median": (
        "This live run looks noisy: the noise check finds {n} signs of noise, among them a roof whose median "
        "run took {pct:.0f}% longer than its fastest. Read its numbers with the box above in mind."
    ),
    "live_noisy_sweep": (
        "This live run looks noisy: its sweep at B = {b} runs at only {pct:.0f}% of its rate at B = {ref}, which "
        "no effect of the roofline explains. Read its numbers with the box above in mind."
    ),
    "h200_same": "the same peak",
    "h200_different": "a different peak",
}
#: Every glued value of the measure page that is one of these sentences: its glue key, and the sentences
#: it is chosen from (``None``: a number, or nothing). ``book/coursemap.py`` reads a role as the mean length
#: of its choices, so the page's reading time counts the sentences a reader reads.
ROLES: dict[str, tuple[str | None, ...]] = {
    "fp64_note": ("fp64_low", "fp64_close", "fp64_high"),
    "triad_vs_copy": ("triad_lower", "triad_higher"),
    "alloc_upper": ("alloc_upper",),
    "alloc_note": ("alloc_both", "alloc_one", "alloc_none", "alloc_unknown"),
    "llc_note": ("llc_unknown", "llc_larger", "llc_fits"),
    "acc_vs_cpu": ("acc_below", "acc_same", "acc_above"),
    "cpu_verdict": ("cpu_little", "cpu_much"),
    "threads_note": ("threads_many", "threads_one", "threads_unknown"),
    "dot_side": ("dot_left", "dot_right"),
    "dot_above": ("dot_above_all", "dot_above_all_read", "dot_above_some", "dot_above_longest", "dot_above_none"),
    "sweep_caption": ("caption_steady", "caption_unsteady", "caption_few", "caption_left_out"),
    "sweep_range": ("sweep_range",),
    "knee_sentence": (
        "knee_few",
        "knee_first_below",
        "knee_first_above",
        "knee_at",
        "unsteady_dip",
        "unsteady_drop",
        "steady_dip",
        "steady_drop",
    ),
    "knee_left_cache": ("left_cache_one", "left_cache_many", None),
    "knee_left_matvec": ("left_matvec", "left_matvec_only", None),
    "model_knee": ("model_knee_ratio", "model_knee", None),
    "knee_reason": (
        "reason_few",
        "reason_early",
        "reason_late_fixed",
        "reason_late_gap",
        "reason_late",
        "reason_good",
        "reason_unsteady",
        "reason_steady_dip",
    ),
    "above_roof": ("above_some", "above_many", "above_none"),
    "sweep_resident": ("sweep_in_llc", None),
    "sweep_resident_knee": ("sweep_in_llc_knee", None),
    "sweep_resident_test": ("sweep_in_llc_test", None),
    "cache_note": ("caches_none", "caches_one", "caches_two", "caches_three"),
    "stair_main": ("levels_none", "levels_no_dram", "levels_steps", "levels_steps_alloc"),
    "stair_steps": ("levels_rise", "levels_flat", "levels_down", None),
    "cpu_cores": (None, "not_reported"),
    "cpu_cores_from": ("cores_topology", "cores_cpu_count", "not_reported"),
    "cpu_clock": (None, "not_reported"),
    "cpu_clock_from": ("clock_cpufreq", "clock_cpuinfo", "clock_none"),
    "cpu_simd": ("simd_bits", "not_reported"),
    "cpu_simd_from": ("simd_avx512f", "simd_avx", "simd_sse2", "simd_asimd", "simd_none"),
    "cpu_fma": ("fma_yes", "fma_no", "not_reported"),
    "cpu_fma_from": ("fma_fma", "fma_fma4", "fma_asimd", "fma_none"),
    "cpu_fma_per_cycle_from": ("fma_per_cycle_assumed",),
    "pred_value": ("pred_value", "pred_no_cores", "pred_no_clock", "pred_no_simd"),
    "pred_fma": ("fma_zen5", None),
    "pred_fma_half": ("fma_zen4", None),
    "pred_verdict": ("pred_above", "pred_close", "pred_nominal", "pred_gap", "pred_far", None),
    "pred_scalar": ("scalar", "scalar_above", None),
    "place_sentence": (
        "place_none",
        "place_unknown",
        "place_partial",
        "place_one_under",
        "place_all_under",
        "place_one_over",
        "place_all_over",
        "place_some_over",
    ),
    "place_unmeasured": ("place_unmeasured", None),
    "place_threads": ("place_threads", "place_threads_one", "place_threads_unknown", None),
    "place_reason": ("over_reason", "over_reason_one", None),
    "place_peak": ("over_peak", "over_peak_one", "over_peak_some", None),
    "noise_peak": ("noise_peak",),
    "noise_sweep": ("noise_drop", "noise_dip", "noise_sweep_none"),
    "noise_ref_count": ("noise_none", "noise_signs"),
    "noise_count": ("noise_none", "noise_signs"),
    "live_verdict": ("live_ok", "live_noisy_spread", "live_noisy_median", "live_noisy_sweep"),
    "h200_same_peak": ("h200_same", "h200_different"),
}
# Added to any knee sentence when the predicted knee lies outside the sizes measured.
OUTSIDE = "; the prediction lies outside the sizes measured, so compare the two with care"
#: The longest a call's fixed costs take (thread wake-up, set-up): a gap above it is not "microseconds".
FIXED_COST_S = 1e-4
#: How far a point's median run may lie above its fastest for its timed runs to count as agreeing: the noise check's.
SPREAD = MEDIAN_SPREAD


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


def knee_paragraph(m: MachineMeasurement) -> dict[str, str]:
    """The glued values of the measure page's knee paragraph and first figure's caption, for measurement ``m``.

    The knee is read from :func:`rooflinelib.knee_sweep`: the sweep less its
    cache-fed points and a ``B = 1`` point that ran faster than ``B = 2`` (the
    matrix–vector routine), each named in ``knee_left_cache`` and ``knee_left_matvec``. The knee and the
    plateau are only spoken of when the rest rises to a plateau
    (:func:`rooflinelib.sweep_shape`). A sweep that does not is called noisy only
    when the failing point's own timed runs spread (median more than
    :data:`SPREAD` above the fastest); runs that agree point to a cost at that
    size, and the sentence says so. A late bend is put down to a call's fixed
    costs only when the slow sizes lose no more than :data:`FIXED_COST_S` each.

    Example
    -------
    >>> from rooflinelib.measure import MachineMeasurement, Point
    >>> def mm(B, s, median=None):
    ...     return Point("matmul", "fp32", {"B": B, "D": 64, "F": 64}, 2 * B * 64 * 64, 4 * (2 * B * 64 + 64 * 64),
    ...                  median or s, s, 4 * s, 3, 1)
    >>> copy = Point("copy", "fp32", {"n": 1000}, 0, 8e3, 1e-6, 1e-6, 1e-6, 3, 1)
    >>> noisy = [mm(16, 1e-6), mm(32, 3e-5, 6e-5), mm(64, 2e-6), mm(128, 4e-5, 8e-5)]
    >>> m = MachineMeasurement(machine={}, stream={"copy": copy}, sweep=noisy, sweep_D=64)
    >>> said = knee_paragraph(m)
    >>> said["knee_left_cache"][:51], said["knee_sentence"][:35]
    ('The point at B = 16 is left out of the knee test: i', 'does not level off: at B = 128 it r')
    """
    import rooflinelib as rl

    peak, bw, D = m.peak_flops("fp32"), m.bandwidth("copy"), m.sweep_D
    everything = sorted(m.sweep, key=lambda p: p.sizes["B"])
    all_sizes = [p.sizes["B"] for p in everything]
    b_pred = float(rl.critical_batch_size(peak, bw, D, D, precision="fp32"))
    out = {"D": f"{D}", "b_pred": f"{b_pred:.1f}", "n_sweep": f"{len(everything)}",
           "sweep_range": say("sweep_range", first=all_sizes[0], last=all_sizes[-1])}  # fmt: skip
    k = rl.knee_sweep(m, "fp32")
    pts, shape = k.points, k.shape
    # each its own glued sentence, so that an edition finds each in its catalog
    out["knee_left_cache"] = out["knee_left_matvec"] = ""
    if k.cache_fed:
        ratios = [p.flops_per_s / (bw * p.intensity) for p in k.cache_fed]
        fed_sizes = [p.sizes["B"] for p in k.cache_fed]
        out["knee_left_cache"] = (
            say("left_cache_one", b=fed_sizes[0], ratio=ratios[0]) if len(fed_sizes) == 1 else
            say("left_cache_many", n=len(fed_sizes), first=fed_sizes[0], last=fed_sizes[-1], ratio=max(ratios))
        )  # fmt: skip
    if k.matvec is not None:
        ratio = k.matvec.flops_per_s / pts[0].flops_per_s  # FLOPs/s at B = 1 over FLOPs/s at B = 2
        out["knee_left_matvec"] = say("left_matvec" if k.cache_fed else "left_matvec_only", ratio=ratio)
    left = [out["knee_left_cache"], out["knee_left_matvec"]]
    left = [text for text in left if text]
    if shape.problem in ("dip", "drop"):
        assert shape.B is not None and shape.share is not None and shape.reference_B is not None
        bad = next(p for p in pts if p.sizes["B"] == shape.B)
        spread = bad.median_s / bad.min_s - 1
        if spread > SPREAD:
            out["knee_sentence"] = say(f"unsteady_{shape.problem}", b=int(shape.B), pct=100 * shape.share,
                                       ref=int(shape.reference_B), fast=bad.min_s * 1e3, slow=bad.max_s * 1e3)  # fmt: skip
            reason = say("reason_unsteady")
        else:
            out["knee_sentence"] = say(f"steady_{shape.problem}", b=int(shape.B), pct=100 * shape.share,
                                       ref=int(shape.reference_B), spread=100 * spread)  # fmt: skip
            reason = say("reason_steady_dip")
        out.update(model_knee="", knee_reason=reason, sweep_caption=say("caption_unsteady"))
        return out
    sizes = [p.sizes["B"] for p in pts]
    roofs = [float(rl.attainable_flops(p.intensity, peak, bw)) for p in pts]
    b_model = rl.knee_batch_size(sizes, roofs)
    b_meas = rl.measured_knee(pts)
    has_ratio = False  # whether the knee sentence gives a ratio to B*
    if math.isnan(b_meas):  # too few sizes to tell a bend from noise
        knee = say("knee_few")
    elif b_meas <= sizes[0]:
        knee = say("knee_first_below" if b_pred >= sizes[0] else "knee_first_above", first=sizes[0])
    else:
        knee, has_ratio = say("knee_at", b=b_meas, ratio=b_meas / b_pred), True
    if not sizes[0] <= b_pred <= sizes[-1]:
        knee += OUTSIDE
    out["knee_sentence"] = knee
    # the model's own curve, sampled at the sizes the knee is read from and read the same way: a perfect fit
    out["model_knee"] = say("model_knee_ratio" if has_ratio else "model_knee", b=b_model, ratio=b_model / b_pred)
    plateau = max(p.flops_per_s for p in pts) / peak
    ratio = b_meas / b_model  # 1 when the sweep bends where the model does (nan with too few sizes)
    if math.isnan(ratio):
        reason = say("reason_few")
    elif ratio < 0.8:
        reason = say("reason_early", plateau=plateau)
    elif ratio > 1.25:
        slow = [p for p, roof in zip(pts, roofs) if p.sizes["B"] < b_meas and p.flops_per_s < 0.8 * roof]
        # how much longer than its roofline time each slow size took: microseconds fit a call's fixed costs
        gap = max((p.min_s - p.flops / roof for p, roof in zip(pts, roofs) if p in slow), default=0.0)
        if not slow:
            reason = say("reason_late")
        elif gap <= FIXED_COST_S:
            reason = say("reason_late_fixed", count=len(slow), us=gap * 1e6)
        else:
            reason = say("reason_late_gap", count=len(slow), ms=gap * 1e3)
    else:
        reason = say("reason_good")
    out["knee_reason"] = reason
    caption = "caption_few" if shape.problem == "few" else "caption_left_out" if left else "caption_steady"
    out["sweep_caption"] = say(caption)
    return out


def prediction(cpu: CpuFigures, peak: float) -> dict[str, str]:
    """The glued values of the measure page's in-core prediction, for the CPU's figures and the measured ``peak``.

    The clock is printed to the MHz, and the prediction is the product of the
    figures as printed, so the arithmetic on the page is exact to its last digit.

    Example
    -------
    >>> from rooflinelib.measure import CpuFigures
    >>> cpu = CpuFigures(cores=2, clock_hz=2.5961e9, simd_bits=512, fma=True)
    >>> prediction(cpu, 169.2e9)["pred_value"]
    'With these figures the float32 prediction is 2 × 2.596 GHz × 16 × 2 × 2 = 332.3 GFLOP/s.'
    """
    out = {}
    if cpu.clock_hz is not None:
        cpu = dataclasses.replace(cpu, clock_hz=round(cpu.clock_hz / 1e6) * 1e6)  # the clock as printed
        out["cpu_clock"] = f"{cpu.clock_hz / 1e9:.3f} GHz"
    else:
        out["cpu_clock"] = say("not_reported")
    predicted, scalar = cpu.predicted_peak("fp32"), cpu.scalar_peak()
    if predicted is None:
        missing = cpu.unread()[0]
        out["pred_value"] = say({"cores": "pred_no_cores", "clock": "pred_no_clock"}.get(missing, "pred_no_simd"))
        out["pred_verdict"] = ""
    else:
        assert cpu.cores is not None and cpu.clock_hz is not None
        out["pred_value"] = say("pred_value", cores=cpu.cores, ghz=cpu.clock_hz / 1e9, lanes=cpu.lanes("fp32"),
                                fma=cpu.fma_per_cycle, flops=2 if cpu.fma else 1, pred=predicted / 1e9)  # fmt: skip
        share = peak / predicted
        key = (
            "pred_above"
            if share > 1.1
            else "pred_nominal"  # a nominal clock: the share says nothing about how full the units are
            if cpu.clock_from == "cpuinfo"
            else "pred_close"
            if share >= 0.75
            else "pred_gap"
            if share >= 0.4
            else "pred_far"
        )
        out["pred_verdict"] = say(key, measured=peak / 1e9, pct=100 * share)
    if scalar is None:
        out["pred_scalar"] = ""
    else:
        out["pred_scalar"] = say("scalar" if scalar < peak else "scalar_above", scalar=scalar / 1e9,
                                 ratio=peak / scalar)  # fmt: skip
    return out


def write_allocate(copy_bw: float, triad_bw: float, dram_bw: float | None) -> dict[str, str]:
    """The glued sentences on write-allocate's upper counts: the copy moving three arrays, the triad seven.

    Each rate is scaled from the arrays it is credited with to the most it may
    move (copy 2 → 3, triad 3 → 7) and compared with ``dram_bw``, what one core
    drew from main memory in the staircase (``None``: not measured).

    Example
    -------
    >>> said = write_allocate(42.6e9, 31.4e9, 57.0e9)
    >>> said["alloc_upper"]
    'At the upper counts the copy would draw 63.9 GB/s and the triad 73.3 GB/s from main memory.'
    >>> said["alloc_note"][:40]
    'Both exceed the 57.0 GB/s one core draws'
    """
    copy_up, triad_up = copy_bw * 3 / 2, triad_bw * 7 / 3
    out = {"alloc_upper": say("alloc_upper", copy=copy_up / 1e9, triad=triad_up / 1e9)}
    if dram_bw is None:
        out["alloc_note"] = say("alloc_unknown")
    else:
        over = sum(rate > dram_bw for rate in (copy_up, triad_up))
        out["alloc_note"] = say(("alloc_none", "alloc_one", "alloc_both")[over], dram=dram_bw / 1e9)
    return out


def sweep_resident(m: MachineMeasurement) -> dict[str, str]:
    """The glued sentences for a matmul sweep that fits in the last-level cache at every batch size.

    Then its weights stay in that cache between runs, while the knee is judged
    against the main-memory roof: the sentences say so, and name the smallest
    ``D`` (doubling the sweep's) whose float32 weights outgrow the cache. Empty
    when the cache's size is unknown or some point of the sweep is larger.

    Example
    -------
    >>> from rooflinelib.measure import MachineMeasurement, Point
    >>> def mm(B, D=2048):
    ...     return Point("matmul", "fp32", {"B": B, "D": D, "F": D}, 2 * B * D * D, 4 * (2 * B * D + D * D),
    ...                  1e-3, 1e-3, 1e-3, 3, 1)
    >>> m = MachineMeasurement(machine={"last_level_cache_bytes": 32 * 2**20}, sweep=[mm(1), mm(128)], sweep_D=2048)
    >>> sweep_resident(m)["sweep_resident"][:58]
    'Every size of this sweep keeps 16 to 18 MiB in play, less '
    >>> sweep_resident(m)["sweep_resident_test"]
    'To test B* against main memory itself, the weights must outgrow the cache: D = 4096 or more in float32.'
    """
    out = dict.fromkeys(("sweep_resident", "sweep_resident_knee", "sweep_resident_test"), "")
    llc = m.machine.get("last_level_cache_bytes")
    sets = [p.bytes for p in m.sweep if p.dtype == "fp32"]
    if not llc or not sets or max(sets) >= llc:
        return out
    d = m.sweep_D
    while d * d * 4 <= llc:  # float32 weights, 4 bytes each
        d *= 2
    out["sweep_resident"] = say("sweep_in_llc", lo=min(sets) / 2**20, hi=max(sets) / 2**20, llc=llc / 2**20)
    out["sweep_resident_knee"] = say("sweep_in_llc_knee")
    out["sweep_resident_test"] = say("sweep_in_llc_test", d=d)
    return out


def fma_evidence(cpu: CpuFigures, model: str | None, l1d: int | None, peak: float) -> dict[str, str]:
    """The glued sentences that back the assumed two 512-bit FMAs per cycle with the L1 data cache's size.

    Among AMD cores with AVX-512, 48 KiB of L1 data cache per core marks Zen 5,
    which has two full 512-bit FMA units; Zen 4 (32 KiB) runs 512-bit FMAs at
    half rate. Empty unless the FMAs per cycle were assumed, the CPU is AMD with
    512-bit SIMD and its L1d is 48 KiB.

    Example
    -------
    >>> from rooflinelib.measure import CpuFigures
    >>> cpu = CpuFigures(cores=2, clock_hz=2.5961e9, simd_bits=512, fma=True)
    >>> print(fma_evidence(cpu, "AMD EPYC", 48 * 1024, 256.6e9)["pred_fma_half"])
    With Zen 4's halved 512-bit rate the prediction would be 166.2 GFLOP/s, below the measured peak of 256.6 GFLOP/s.
    >>> fma_evidence(cpu, "AMD EPYC", 32 * 1024, 256.6e9)["pred_fma"]
    ''
    """
    out = {"pred_fma": "", "pred_fma_half": ""}
    zen5 = "AMD" in (model or "") and cpu.simd_bits == 512 and l1d == 48 * 1024
    if not zen5 or cpu.fma_per_cycle_from != "assumed" or cpu.fma_per_cycle != 2 or cpu.clock_hz is None:
        return out
    predicted = cpu.predicted_peak("fp32")  # at the clock read, as the ceilings without FMA, SIMD or both
    assert predicted is not None
    out["pred_fma"] = say("fma_zen5", l1=l1d / 1024)
    out["pred_fma_half"] = say("fma_zen4", half=predicted / 2 / 1e9, measured=peak / 1e9)
    return out


def _signs(n: int) -> str:
    return say("noise_none") if n == 0 else say("noise_signs", n=n)


def _roof_run(m: MachineMeasurement, dtype: str = "fp32") -> tuple[float, float]:
    """The slowest and the median run of ``m``'s fastest matmul in ``dtype``, each over its fastest run."""
    best = m.peak_point(dtype)
    return best.max_s / best.min_s, best.median_s / best.min_s


def noise_box(ref: MachineMeasurement, noisy: MachineMeasurement) -> dict[str, str]:
    """The glued values of the measure page's box "What noise looks like": a contended run against the reference.

    Example
    -------
    >>> import rooflinelib as rl
    >>> runs = rl.reference_measurements(kind="cpu")
    >>> said = noise_box(runs["cpu-reference"], runs["cpu-contended"])
    >>> said["noise_ref_count"], said["noise_loops"]
    ('no sign of noise', '2')
    """
    import rooflinelib as rl

    slow, median = _roof_run(noisy)
    ref_slow, ref_median = _roof_run(ref)
    health, ref_health = rl.measurement_health(noisy), rl.measurement_health(ref)
    sweep = next((p for p in health.problems if p.check in ("dip", "drop")), None)
    if sweep is None:
        sweep_text = say("noise_sweep_none")
    else:
        assert sweep.B is not None and sweep.reference_B is not None
        sweep_text = say(f"noise_{sweep.check}", b=sweep.B, pct=100 * sweep.value,
                         ref=sweep.reference_B)  # fmt: skip
    return {
        "noise_loops": f"{noisy.provenance['load_processes']}",
        "noise_peak": say("noise_peak", slow=slow, median=median, ref_slow=ref_slow, ref_median=ref_median),
        "noise_sweep": sweep_text,
        "noise_ref_count": _signs(len(ref_health.problems)),
        "noise_count": _signs(len(health.problems)),
    }


def live_verdict(m: MachineMeasurement, ref: MachineMeasurement) -> str:
    """The short verdict on the live run of the measure page: does it pass the noise check, and against what.

    Example
    -------
    >>> import rooflinelib as rl
    >>> runs = rl.reference_measurements(kind="cpu")
    >>> live_verdict(runs["cpu-contended"], runs["cpu-reference"])[:58]
    'This live run looks noisy: the noise check finds 8 signs o'
    >>> live_verdict(runs["cpu-reference"], runs["cpu-reference"])[:70]
    'This live run passes the noise check. Its peak is 256.6 GFLOP/s and it'
    """
    import rooflinelib as rl

    problems = rl.measurement_health(m).problems
    if not problems:
        peak, copy = m.peak_flops("fp32"), m.bandwidth("copy")
        return say("live_ok", peak=peak / 1e9, copy=copy / 1e9, pct_peak=100 * peak / ref.peak_flops("fp32"),
                   pct_copy=100 * copy / ref.bandwidth("copy"))  # fmt: skip
    spread = [p.value for p in problems if p.check == "slowest"]
    if spread:
        return say("live_noisy_spread", n=len(problems), ratio=max(spread))
    median = [p.value for p in problems if p.check == "median"]
    if median:
        return say("live_noisy_median", n=len(problems), pct=100 * (max(median) - 1))
    sweep = problems[0]
    assert sweep.B is not None and sweep.reference_B is not None
    return say("live_noisy_sweep", b=sweep.B, pct=100 * sweep.value, ref=sweep.reference_B)

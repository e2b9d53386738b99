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

"""The papers the reproductions follow, cited by authors, title, venue and year.

Each experiment's ``source`` starts with one of these and adds the section and figures.
``reference/README.md`` lists the same papers.
"""

from __future__ import annotations

__all__ = [
    "BECKE_2012",
    "GONZALEZ_USACH_2012",
    "HONDA_2009",
    "LE_2013",
    "MATHIS_1997",
    "RAICIU_2011",
]

HONDA_2009 = (
    'M. Honda, "Bidimensional-Probe Multipath Congestion Control for Shared Bottleneck '
    'Fairness", thesis, Keio University, 2009'
)
LE_2013 = (
    'T.-A. Le, "Improving the Performance of Multipath Congestion Control over Wireless '
    'Networks", 2013'
)
GONZALEZ_USACH_2012 = (
    'R. González Usach and M. Kühlewind, "Implementation and Evaluation of Coupled Congestion '
    'Control for Multipath TCP", EUNICE 2012'
)
BECKE_2012 = (
    'M. Becke, T. Dreibholz, H. Adhari and E. P. Rathgeb, "On the Fairness of Transport '
    'Protocols in a Multi-Path Environment", IEEE ICC 2012'
)
MATHIS_1997 = (
    'M. Mathis, J. Semke, J. Mahdavi and T. Ott, "The Macroscopic Behavior of the TCP '
    'Congestion Avoidance Algorithm", ACM CCR 27(3), 1997'
)
RAICIU_2011 = (
    'C. Raiciu, S. Barré, C. Pluntke, A. Greenhalgh, D. Wischik and M. Handley, "Improving '
    'Datacenter Performance and Robustness with Multipath TCP", ACM SIGCOMM 2011'
)

"""Course tooling for grading a whole class with nbgrader: parallel, fault-isolated autograding and a class report.

Run from the course root::

    python -m grading autograde rooflines
    python -m grading report rooflines
"""

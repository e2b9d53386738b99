"""nbgrader configuration: the repository root is the course root.

Instructor sources live in ``solutions/``; ``nbgrader generate_assignment``
writes the student versions to ``exercises/``.
"""

from pathlib import Path

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (provided by nbgrader)

c.CourseDirectory.root = str(Path(__file__).resolve().parent)
c.CourseDirectory.course_id = "roofline-course"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"

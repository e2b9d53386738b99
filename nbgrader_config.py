"""nbgrader configuration: the repository root is the course root.

Instructor sources live in ``solutions/``; ``nbgrader generate_assignment``
writes the student versions to ``exercises/``. The settings below are for what
real classes run into: code that never finishes, test cells that were deleted
or edited, a kernel killed by the student's code, and hidden tests that must
not show up in the feedback.
"""

from pathlib import Path

from nbclient.exceptions import DeadKernelError
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor, Preprocessor
from nbformat.v4 import new_output
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    Execute,
    GetGrades,
    IgnorePattern,
    LimitOutput,
    SaveAutoGrades,
)

c = get_config()  # type: ignore[name-defined]  # noqa: F821  (provided by nbgrader)

c.CourseDirectory.root = str(Path(__file__).resolve().parent)
c.CourseDirectory.course_id = "roofline-course"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"


class ExecuteSurvivingKernelDeath(Execute):
    """Run a notebook; if the student's code kills the kernel, fail that notebook only.

    Every grade cell that had not finished running gets an error output, so it
    scores 0, and nbgrader goes on with the next notebook and the next student.
    """

    def preprocess(self, nb, resources=None, km=None):
        try:
            return super().preprocess(nb, resources, km=km)
        except DeadKernelError as err:
            self.log.error("The kernel died while running this notebook (%s); unfinished tests score 0.", err)
            message = "The kernel died (the code exited or crashed the Python process), so this test did not run."
            for cell in nb.cells:
                grade = cell.get("metadata", {}).get("nbgrader", {}).get("grade", False)
                if cell.cell_type == "code" and grade and cell.get("execution_count") is None:
                    cell.outputs.append(
                        new_output(
                            "error", ename="DeadKernelError", evalue=message, traceback=[f"DeadKernelError: {message}"]
                        )
                    )
            return nb, resources


class ClearHiddenTestsAndTracebacks(ClearHiddenTests):
    """For feedback: drop hidden test code, and cut tracebacks of those cells down to the message."""

    def preprocess_cell(self, cell, resources, cell_index):
        had_hidden = cell.cell_type == "code" and self.begin_test_delimeter in cell.source
        cell, resources = super().preprocess_cell(cell, resources, cell_index)
        if had_hidden:
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


class GradingMissing(Preprocessor):
    """Stands for the grader's entry point where the grading package is not installed: it grades nothing."""

    grading_entry = True
    execute_class = ExecuteSurvivingKernelDeath

    def __call__(self, nb, resources):  # never skipped (unexecuted, every check would score in full)
        return self.preprocess(nb, resources)

    def preprocess(self, nb, resources):
        raise RuntimeError(
            "nbgrader autograde runs every notebook in the course's sandbox and judge, from the grading package, "
            "which is not installed here: run `make setup-test` (or pip install ./grading)"
        )


try:  # the course's sandbox and judge: every entry point of nbgrader autograde runs through them
    from grading.judged import JudgedExecute
except ImportError:
    JudgedExecute = GradingMissing

# Autograding: at most 60 s per cell; a cell that runs longer is interrupted,
# scores 0, and the rest of the notebook still runs. Each notebook runs in the
# grader's sandbox, every check judged outside the student's kernel
# (grading/judged.py); `python -m grading autograde` runs the same executor.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
c.JudgedExecute.execute_class = ExecuteSurvivingKernelDeath
c.Autograde.autograde_preprocessors = [
    JudgedExecute,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]

# A deleted test cell is put back from the gradebook; its first code line
# raises, so the restored cell scores 0 (an edited test cell is simply
# overwritten with the original, which then runs as usual).
c.OverwriteCells.add_missing_cells = True
c.OverwriteCells.missing_cell_notification = (
    "This test cell (id {cell_id}) was deleted from the submission and restored by the grader; it scores 0.\n"
    "raise AssertionError('This test cell was deleted from the submission; it was restored and scores 0.')\n\n"
)

# Feedback shows the visible tests and their messages, never the hidden ones.
c.GenerateFeedback.preprocessors = [GetGrades, ClearHiddenTestsAndTracebacks, CSSHTMLHeaderPreprocessor]

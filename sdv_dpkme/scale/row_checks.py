"""SDV's checks of the private rows, run by the workers of a distributed pass."""

from collections import defaultdict

from sdv.errors import InvalidDataError

from sdv_dpkme.privacy.diagnostics import sanitised, showing_private_values


class TableChecks:
    """The checks an in-memory fit runs on its rows in SDV's ``validate`` (the metadata's column
    checks, the constraints' ``validate``), run by the workers on every row of the pass, so a
    distributed fit refuses the rows an in-memory fit refuses. It holds public facts only (the
    metadata and the constraints). A check across rows (a key's uniqueness) sees one chunk."""

    def __init__(self, metadata, table_name, constraints):
        self.metadata, self.table_name = metadata, table_name
        self.constraints = list(constraints)

    def __call__(self, frame):
        # the table's own check: Metadata.validate_data would swap the process-wide warning
        # state (catch_warnings), which is not safe in Dask's threads; a warnings list given to
        # it keeps SDV's datetime-format advice quiet, as the in-memory fit's validate does
        try:
            self.metadata.tables[self.table_name].validate_data(frame, defaultdict(list))
        except InvalidDataError as error:  # worded as Metadata.validate_data words it
            worded = InvalidDataError([f'Errors in {self.table_name}:' + ''.join(
                f'\nError: {e}' for e in error.errors)])
            # SDV's text quotes values: raised from here it would pass for our own message
            raise (worded if showing_private_values() else sanitised(worded)) from None
        for constraint in self.constraints:
            constraint.validate(data=frame, metadata=self.metadata)


class ValueChecks:
    """The value checks of the declared columns' transformers (numbers, dates, undeclared
    missing values; ``check_values``), run by the workers: in discovery's pass they refuse bad
    rows before its release, as the in-memory fit does before its own. Public facts only."""

    def __init__(self, transformers):
        self.transformers = dict(transformers)  # {column: a fitted DP transformer}

    def __call__(self, frame):
        for column, transformer in self.transformers.items():
            transformer.check_values(frame[column])


class CheckedPass:
    """A pass's map function run after ``checks`` on each chunk of all the columns."""

    def __init__(self, function, checks):
        self.function, self.checks = function, list(checks)

    def __call__(self, frame):
        for check in self.checks:
            check(frame)
        return self.function(frame)

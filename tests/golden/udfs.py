"""Python functions used by the golden programs (scalar, table and aggregate)."""

from planengine.functions.python_udf import udf, udtf


@udf(result_type="STRING")
def mask_user(user_id):
    return None if user_id is None else f"user-{user_id % 100}"


@udtf(result_type="ROW<part STRING, depth INT>")
def path_parts(page):
    for depth, part in enumerate((page or "").strip("/").split("/")):
        if part:
            yield part, depth


class WeightedAvg:
    """SUM(value * weight) / SUM(weight), with retraction."""

    result_type = "BIGINT"

    def create_accumulator(self):
        return [0, 0]

    def accumulate(self, acc, value, weight):
        if value is not None and weight is not None:
            acc[0] += value * weight
            acc[1] += weight

    def retract(self, acc, value, weight):
        if value is not None and weight is not None:
            acc[0] -= value * weight
            acc[1] -= weight

    def get_value(self, acc):
        return None if acc[1] == 0 else acc[0] // acc[1]

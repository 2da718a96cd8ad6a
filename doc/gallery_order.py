"""Order of the example gallery: a course, first example first."""

COURSE = [
    "plot_smooth_vs_binned.py",  # measure and plot
    "plot_scorers.py",  # select models by calibration
    "plot_recalibration.py",  # fix miscalibration
    "plot_certify_perturbed.py",  # certify it
    "plot_perturbation_scale.py",  # tune the certificate
    "plot_multiclass_kde.py",  # more than two classes
    "plot_kde_xe.py",  # train for calibration
    "plot_scaling.py",  # more data than memory
]


class CourseOrder:
    """Sort key for ``within_subsection_order``: the position in ``COURSE``.

    An example missing from the list is an error, so that a new one is placed
    in the course deliberately.
    """

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        if filename not in COURSE:
            raise ValueError(
                f"{filename} is not in doc/gallery_order.py COURSE; add it where "
                "it belongs in the course."
            )
        return COURSE.index(filename)

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

"""The HTML report (`hpceval report`): one self-contained page, every figure as PNG and SVG,
every table as CSV. See `hpceval.report.builder` for the layout, `sections` for the content."""

from hpceval.report.builder import ReportOptions, ReportResult, generate_report, write_report

__all__ = ["ReportOptions", "ReportResult", "generate_report", "write_report"]

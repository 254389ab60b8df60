"""Shared analyses: facts computed once per unit and read by several rules.

Use them through ``ctx.analysis(name)``, which memoises the result per unit.
"""

"""The plugin API: everything a LocalQwen plugin imports comes from here."""

from localqwen.plugin_api import events
from localqwen.plugin_api.cancel import Cancelled, CancelToken
from localqwen.plugin_api.context import Context
from localqwen.plugin_api.forms import FieldSpec, Form, FormError, Widget, field, form_fields, parse_form
from localqwen.plugin_api.host import PluginFailure, PluginHost, PluginInfo, PluginLoadError
from localqwen.plugin_api.plugin import Action, Plugin, Requirements, action
from localqwen.plugin_api.runner import run_action

__all__ = [
    "Action",
    "CancelToken",
    "Cancelled",
    "Context",
    "FieldSpec",
    "Form",
    "FormError",
    "Plugin",
    "PluginFailure",
    "PluginHost",
    "PluginInfo",
    "PluginLoadError",
    "Requirements",
    "Widget",
    "action",
    "events",
    "field",
    "form_fields",
    "parse_form",
    "run_action",
]

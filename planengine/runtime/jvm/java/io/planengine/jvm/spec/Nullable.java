package io.planengine.jvm.spec;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * A spec value that may be absent: the JSON field is missing or null (the Python dataclass's {@code X | None}).
 * A type annotation, so it says which part of a type may be null: {@code @Nullable Integer} (an optional
 * position), {@code int @Nullable []} (an optional list), {@code List<@Nullable String>} (a list with NULL
 * items). Kept at run time because the spec check ({@code tests/jvm/spec_pairs.py}) reads it from the records.
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE_USE)
public @interface Nullable {}

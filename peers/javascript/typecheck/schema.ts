// The Standard Schema v1 interface (https://standardschema.dev, @standard-schema/spec 1.x),
// declared in the project itself: gen.mjs copies this file unchanged into both generated
// projects, and every procedure's input is a StandardSchemaV1 of this declaration. Neither
// oRPC nor tRPC sees its own schema type (which TypeScript would match by identity, skipping the
// structural comparison the other library pays for), and no schema library's types are loaded.

/** A schema: its `~standard` property holds the validator and, for the type system only, the types. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly "~standard": StandardSchemaV1.Props<Input, Output>;
}

export declare namespace StandardSchemaV1 {
  /** What every Standard Schema exposes under `~standard`. */
  export interface Props<Input = unknown, Output = Input> {
    /** The version of the standard: always 1. */
    readonly version: 1;
    /** The schema library's name. */
    readonly vendor: string;
    /** Validates an unknown value, synchronously or not. */
    readonly validate: (
      value: unknown,
      options?: Options | undefined,
    ) => Result<Output> | Promise<Result<Output>>;
    /** The input and output types, never present at run time. */
    readonly types?: Types<Input, Output> | undefined;
  }

  /** Options a caller may pass to `validate`. */
  export interface Options {
    readonly libraryOptions?: Record<string, unknown> | undefined;
  }

  /** The outcome of `validate`. */
  export type Result<Output> = SuccessResult<Output> | FailureResult;

  /** A valid value: `issues` is absent. */
  export interface SuccessResult<Output> {
    readonly value: Output;
    readonly issues?: undefined;
  }

  /** An invalid value: the issues found. */
  export interface FailureResult {
    readonly issues: ReadonlyArray<Issue>;
  }

  /** One problem of an invalid value, and where it is. */
  export interface Issue {
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
  }

  /** A step of an issue's path. */
  export interface PathSegment {
    readonly key: PropertyKey;
  }

  /** The types a schema carries. */
  export interface Types<Input = unknown, Output = Input> {
    readonly input: Input;
    readonly output: Output;
  }

  /** The input type of a schema. */
  export type InferInput<Schema extends StandardSchemaV1> = NonNullable<
    Schema["~standard"]["types"]
  >["input"];

  /** The output type of a schema. */
  export type InferOutput<Schema extends StandardSchemaV1> = NonNullable<
    Schema["~standard"]["types"]
  >["output"];
}
